package bridgeproto

// Message types. Direction: "in" is plugin to daemon, "out" daemon to plugin.
const (
	TypeHello               = "hello"                 // in: first message, carries the pairing token
	TypeHelloOK             = "hello_ok"              // out: pairing accepted
	TypeStateSnapshot       = "state_snapshot"        // out: system state + automation conversations
	TypeActionRequest       = "action_request"        // in: pause, resume, drain the system
	TypeActionRequestResult = "action_request_result" // out: answer to action_request
	TypeCredentials         = "credentials"           // in: captured login (values dropped on parse)
	TypeAPIEndpoints        = "api_endpoints"         // in: captured endpoint list
	TypeAPIRequest          = "api_request"           // out: relay one HTTP request inside the page
	TypeAPIResponse         = "api_response"          // in: buffered answer to api_request
	TypeStreamOpen          = "stream_open"           // in: streamed answer begins
	TypeStreamEvent         = "stream_event"          // in: one streamed chunk, increasing seq
	TypeStreamEvents        = "stream_events"         // in: several stream_events of one request in one frame (capability CapStreamEvents)
	TypeStreamEnd           = "stream_end"            // in: streamed answer finished
	TypeStreamError         = "stream_error"          // in: streamed answer failed
	TypeRequestCancel       = "request_cancel"        // out: stop a relayed request
	TypeAction              = "action"                // out: management action for the plugin
	TypeActionResult        = "action_result"         // in: structured answer to action
	TypeShellRuntime        = "shell_runtime"         // in: plugin shell runtime changed
	TypeKeepalive           = "keepalive"             // both: data-frame heartbeat (MV3 service workers)
	TypeError               = "error"                 // out: an inbound message was refused
)

// Platforms a request may target (SPEC.md: platform_a, platform_b, platform_c).
const (
	PlatformA = "platform_a"
	PlatformB = "platform_b"
	PlatformC = "platform_c"
)

// ValidPlatform reports whether p is one of the three relay platforms.
func ValidPlatform(p string) bool { return p == PlatformA || p == PlatformB || p == PlatformC }

// ManagedPlatform reports whether p is covered by shell and credential
// management (SPEC.md: platform_a and platform_b; platform_c is relay only).
func ManagedPlatform(p string) bool { return p == PlatformA || p == PlatformB }

// Response modes of api_request.
const (
	ModeBuffered = "buffered"
	ModeSSE      = "sse"
)

// System actions a plugin may ask for with action_request.
const (
	SystemPause  = "pause"
	SystemResume = "resume"
	SystemDrain  = "drain"
)

// Capabilities a plugin may announce in its hello (Hello.Capabilities); the
// daemon answers the ones it takes in hello_ok (HelloOK.Capabilities), and a
// plugin uses a capability only once hello_ok listed it. Unknown names are
// ignored, so a newer plugin pairs with an older daemon.
const (
	// CapStreamEvents: the plugin may send stream_events frames (a batch of
	// one request's events in one frame).
	CapStreamEvents = "stream_events"
)
