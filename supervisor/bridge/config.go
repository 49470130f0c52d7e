// Package bridge is the daemon side of the browser plugin link: the
// WebSocket hub on /ws/browser, one reader and one writer goroutine per
// connection, pairing, heartbeats, the correlation of relayed requests and
// management actions with the plugin's answers, and the browser read model.
package bridge

import (
	"net"
	"time"
)

// Config tunes the hub. Zero values take the defaults below.
type Config struct {
	// PairingToken is what the plugin must send in hello (the shared token
	// unless configured otherwise).
	PairingToken string
	// CodesOnly refuses a hello with the shared token (browser_pairing =
	// "codes"): only pairing codes and the credentials they give open the
	// bridge.
	CodesOnly bool
	// TokenScopes are the scopes of a connection paired with the token
	// (host-ops only when the pairing token is the shared token itself).
	TokenScopes []string
	// PairingFailures is how many failed code hellos one remote address
	// (and, separately, one client id) may make per minute before every
	// further code hello from it (for it) is refused unread; the same bounds
	// wrong tokens per address. Credential hellos are never limited.
	PairingFailures int
	// HashKey keys the stored hashes of pairing codes and credentials
	// (keyderive.PairingHash of the cluster key: the same on every node,
	// and in no snapshot or raft entry). Empty: a random key for this
	// process only (tests), so nothing paired survives a restart.
	HashKey []byte
	// CodeGuessesGlobal bounds failed code hellos from all addresses
	// together per minute (docs/security.md has the arithmetic).
	CodeGuessesGlobal int
	// AllowedOrigins are full origins, e.g. chrome-extension://<id>. A
	// request without Origin (a non-browser client) is always allowed.
	AllowedOrigins []string
	// AllowedPeers are extra peer networks inside 100.64.0.0/10; loopback
	// is always allowed.
	AllowedPeers []*net.IPNet

	KeepaliveInterval time.Duration // data-frame keepalive and ping period
	ReadTimeout       time.Duration // no frame (data or pong) for this long closes
	AuthTimeout       time.Duration // hello must arrive within this
	MaxMessageBytes   int64
	SendQueue         int // outbound messages buffered per connection
	MaxClients        int // live connections (distinct clientIds) at once
	MaxUnpaired       int // upgraded connections still waiting for their hello
	MaxBadMessages    int // invalid messages tolerated before closing

	ActionTimeout  time.Duration // wait for action_result
	RequestTimeout time.Duration // wait for a relayed answer (buffered) or the first stream frame

	StaleAfter    time.Duration // live but silent this long: stale
	LostAfter     time.Duration // gone this long: lost
	SweepInterval time.Duration // stale sweeper and activity flush period
	// RefusalFlush is how often refused pairing counts go to raft (at most
	// one command per period, whatever the number of refusals).
	RefusalFlush time.Duration
}

// Defaults for Config.
const (
	DefaultKeepalive      = 20 * time.Second // MV3 service workers sleep after 30 s idle
	DefaultMaxMessage     = 8 << 20
	DefaultSendQueue      = 256
	DefaultMaxClients     = 128 // well below raftstore.MaxBrowserClients
	DefaultMaxBad         = 10
	DefaultMaxUnpaired    = 16 // a hello arrives within AuthTimeout, so more is an attack
	DefaultActionTimeout  = 15 * time.Second
	DefaultRequestTimeout = 120 * time.Second
	DefaultStaleAfter     = 60 * time.Second
	DefaultLostAfter      = 10 * time.Minute
	DefaultSweepInterval  = 5 * time.Second
)

func (c Config) withDefaults() Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&c.KeepaliveInterval, DefaultKeepalive)
	set(&c.ReadTimeout, 3*c.KeepaliveInterval)
	set(&c.AuthTimeout, 10*time.Second)
	set(&c.ActionTimeout, DefaultActionTimeout)
	set(&c.RequestTimeout, DefaultRequestTimeout)
	set(&c.StaleAfter, DefaultStaleAfter)
	set(&c.LostAfter, DefaultLostAfter)
	set(&c.SweepInterval, DefaultSweepInterval)
	set(&c.RefusalFlush, time.Second)
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessage
	}
	if c.SendQueue <= 0 {
		c.SendQueue = DefaultSendQueue
	}
	if c.MaxClients <= 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.MaxUnpaired <= 0 {
		c.MaxUnpaired = DefaultMaxUnpaired
	}
	if c.PairingFailures <= 0 {
		c.PairingFailures = DefaultPairingFailures
	}
	if c.CodeGuessesGlobal <= 0 {
		c.CodeGuessesGlobal = DefaultCodeGuessesGlobal
	}
	if c.MaxBadMessages <= 0 {
		c.MaxBadMessages = DefaultMaxBad
	}
	return c
}
