package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/supervisor/config"
)

// extensionID is the id Chromium derives from extension/manifest.json's key;
// the daemon's default browser_extension_ids holds it.
const extensionID = config.BundledExtensionID

// chromiumPath finds Debian's Chromium. Under CI=true a missing browser fails
// the test (the CI installs it); elsewhere the test is skipped.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("SVCD_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (apt-get install chromium chromium-driver); CI must run the extension e2e")
	}
	t.Skip("chromium not installed")
	return ""
}

// browser is one headless Chromium with the unpacked extension, driven over
// the DevTools protocol (a minimal client: gorilla/websocket is already a
// dependency, and the tests need only a handful of commands).
type browser struct {
	t        *testing.T
	cmd      *exec.Cmd
	conn     *websocket.Conn
	wmu      sync.Mutex
	nextID   atomic.Int64
	mu       sync.Mutex
	pending  map[int64]chan cdpReply
	dir      string
	console  syncBufferE // console messages and exceptions of the sessions with Runtime enabled
	frames   syncBufferE // WebSocket frames sent by the sessions with Network enabled, one a line
	framesIn syncBufferE // and the frames they received, one a line
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	return startBrowserWith(t, filepath.Join(harness.RepoRoot(), "extension"))
}

// startBrowserWith loads the unpacked extension from ext (a copy with a
// development config, for instance), or none when ext is "".
func startBrowserWith(t *testing.T, ext string) *browser {
	t.Helper()
	bin := chromiumPath(t)
	dir := t.TempDir()
	args := []string{
		"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--no-default-browser-check",
		"--user-data-dir=" + dir, "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1"}
	if ext != "" { // "": a plain browser, for the daemon's own pages
		args = append(args, "--load-extension="+ext, "--disable-extensions-except="+ext, "--enable-unsafe-extension-debugging")
	}
	cmd := exec.Command(bin, append(args, "about:blank")...)
	var logs syncBufferE
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, cmd: cmd, pending: map[int64]chan cdpReply{}, dir: dir}
	t.Cleanup(func() {
		if b.conn != nil {
			b.conn.Close()
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// A failed test shows what the extension logged and what went over
		// its socket, the browser's half of a flake seen once under load.
		if t.Failed() {
			t.Logf("extension console:\n%s\nframes sent:\n%s\nframes received:\n%s", harness.LogTail(b.console.String(), 32<<10),
				harness.LogTail(b.frames.String(), 32<<10), harness.LogTail(b.framesIn.String(), 32<<10))
		}
	})
	var port, path string
	deadline := time.Now().Add(20 * time.Second)
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if lines := strings.Split(string(raw), "\n"); err == nil && len(lines) >= 2 && lines[1] != "" {
			port, path = lines[0], lines[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromium did not open its DevTools port:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	c, _, err := websocket.DefaultDialer.Dial("ws://127.0.0.1:"+port+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	b.conn = c
	go b.readLoop()
	return b
}

func (b *browser) readLoop() {
	for {
		var m struct {
			ID     int64           `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			cdpReply
		}
		if err := b.conn.ReadJSON(&m); err != nil {
			return
		}
		if m.ID == 0 {
			switch m.Method {
			case "Runtime.consoleAPICalled", "Runtime.exceptionThrown":
				b.console.Write(append(m.Params, '\n'))
			case "Network.webSocketFrameSent":
				var f struct {
					Response struct {
						PayloadData string `json:"payloadData"`
					} `json:"response"`
				}
				if json.Unmarshal(m.Params, &f) == nil {
					b.frames.Write([]byte(f.Response.PayloadData + "\n"))
				}
			case "Network.webSocketFrameReceived":
				var f struct {
					Response struct {
						PayloadData string `json:"payloadData"`
					} `json:"response"`
				}
				if json.Unmarshal(m.Params, &f) == nil {
					b.framesIn.Write([]byte(f.Response.PayloadData + "\n"))
				}
			}
			continue
		}
		b.mu.Lock()
		ch := b.pending[m.ID]
		delete(b.pending, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends one DevTools command (on a session when sessionID is set).
func (b *browser) call(sessionID, method string, params any, out any) error {
	return b.callT(20*time.Second, sessionID, method, params, out)
}

// callT is call with its own bound on the answer.
func (b *browser) callT(timeout time.Duration, sessionID, method string, params any, out any) error {
	id := b.nextID.Add(1)
	ch := make(chan cdpReply, 1)
	b.mu.Lock()
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if params == nil {
		msg["params"] = map[string]any{}
	}
	if sessionID != "" {
		msg["sessionId"] = sessionID
	}
	b.wmu.Lock()
	err := b.conn.WriteJSON(msg)
	b.wmu.Unlock()
	if err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("%s: no answer in %s", method, timeout)
	}
}

type targetInfo struct {
	TargetID string `json:"targetId"`
	Type     string `json:"type"`
	URL      string `json:"url"`
	Title    string `json:"title"`
}

func (b *browser) targets() []targetInfo {
	var r struct {
		TargetInfos []targetInfo `json:"targetInfos"`
	}
	if err := b.call("", "Target.getTargets", nil, &r); err != nil {
		b.t.Fatal(err)
	}
	return r.TargetInfos
}

// waitTarget waits for a target of type whose URL has prefix.
func (b *browser) waitTarget(typ, prefix string, timeout time.Duration) targetInfo {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, ti := range b.targets() {
			if ti.Type == typ && strings.HasPrefix(ti.URL, prefix) {
				return ti
			}
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("no %s target at %s within %s: %+v", typ, prefix, timeout, b.targets())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *browser) attach(targetID string) string {
	b.t.Helper()
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, &r); err != nil {
		b.t.Fatal(err)
	}
	return r.SessionID
}

// eval runs expr (awaiting a promise) in a session and decodes its value.
func (b *browser) eval(sessionID, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.call(sessionID, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("eval: %s %s", r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		return json.Unmarshal(r.Result.Value, out)
	}
	return nil
}

// worker attaches to the extension's service worker and records its
// console (b.console), so a test can check no captured value is logged.
func (b *browser) worker() string {
	ti := b.waitTarget("service_worker", "chrome-extension://"+extensionID+"/", 15*time.Second)
	sw := b.attach(ti.TargetID)
	b.recordConsole(sw)
	return sw
}

// recordFrames records the WebSocket frames a session sends (the service
// worker's to the daemon) into b.frames: what exactly went on the wire.
func (b *browser) recordFrames(session string) {
	if err := b.call(session, "Network.enable", nil, nil); err != nil {
		b.t.Fatal(err)
	}
}

// recordConsole sends a session's console messages and exceptions (every
// world of a page: the content script's too) into b.console.
func (b *browser) recordConsole(session string) {
	if err := b.call(session, "Runtime.enable", nil, nil); err != nil {
		b.t.Fatal(err)
	}
}

type syncBufferE struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBufferE) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBufferE) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
