package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
)

// TestRelayLeasedAdmission: with admission leased in bulk from the relay
// worker and outcomes delivered in batches, concurrent requests still keep
// the window limit exactly, each caller gets its own answer (no cross-talk),
// buffered answers carry Content-Length, and the worker's counts settle to
// what really happened.
func TestRelayLeasedAdmission(t *testing.T) {
	t.Parallel()
	d := startBrowserDaemon(t, "SVC_RELAY_WINDOW_MAX=20", "SVC_RELAY_WINDOW_MS=600000", "SVC_RELAY_MAX_IN_FLIGHT=64")
	plat := fakeplugin.NewPlatform("s")
	defer plat.Close()
	connectPlugin(t, d, "lease-1", plat)
	client := &http.Client{Timeout: 20 * time.Second}
	type answer struct {
		status int
		length int64
		body   []byte
	}
	const callers = 32
	answers := make([]answer, callers)
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(map[string]any{"platform": "platform_b", "path": "/api/echo", "method": "POST",
				"body": map[string]int{"caller": i}})
			req, _ := http.NewRequest("POST", d.URL+"/v1/browser/request", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers[i] = answer{resp.StatusCode, resp.ContentLength, b}
		}()
	}
	wg.Wait()
	ok, limited := 0, 0
	for i, a := range answers {
		switch a.status {
		case 200:
			ok++
			var env struct {
				Data struct {
					Body string `json:"body"`
				} `json:"data"`
			}
			if err := json.Unmarshal(a.body, &env); err != nil {
				t.Fatalf("caller %d: %v %s", i, err, a.body)
			}
			var echo struct {
				Body string `json:"body"`
			}
			_ = json.Unmarshal([]byte(env.Data.Body), &echo)
			if want := fmt.Sprintf(`{"caller":%d}`, i); echo.Body != want {
				t.Fatalf("caller %d got another caller's answer: %q", i, echo.Body)
			}
			if a.length != int64(len(a.body)) {
				t.Fatalf("caller %d: Content-Length %d for a %d-byte answer", i, a.length, len(a.body))
			}
		case 429:
			limited++
			if !bytes.Contains(a.body, []byte(`"reason":"rate_limited"`)) {
				t.Fatalf("caller %d refused for another reason: %s", i, a.body)
			}
		default:
			t.Fatalf("caller %d: %d %s", i, a.status, a.body)
		}
	}
	if ok != 20 || limited != callers-20 {
		t.Fatalf("%d answered, %d rate-limited; want 20 and %d", ok, limited, callers-20)
	}
	waitUntil(t, 5*time.Second, "relay counts settled (outcomes delivered, unused tokens back)", func() bool {
		for _, tg := range readModel(t, d, "").Policy.Targets {
			if tg.Relay != nil && tg.Relay["admitted"] == float64(20) && tg.Relay["window_count"] == float64(20) && tg.InFlight == 0 {
				return true
			}
		}
		return false
	})
}
