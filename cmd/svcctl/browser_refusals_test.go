package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
)

// Refused pairing attempts are counted durably (raft): after a SIGKILL
// restart (the counts went to raft on the periodic flush) and after a
// graceful one (the shutdown flushes what is pending), svcctl browser
// clients / ls and the panel still show the count and the last reason.
func TestBrowserRefusalsSurviveRestart(t *testing.T) {
	d := harness.Start(t, harness.Options{Env: []string{"SVC_BROWSER_PAIRING=codes"}})
	refuse := func(n int, clientID string) {
		t.Helper()
		for i := 0; i < n; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			p, _, err := fakeplugin.Dial(ctx, fakeplugin.Options{URL: "ws://" + d.Addr + "/ws/browser", Code: "ZZZZ-ZZZZ", ClientID: clientID})
			cancel()
			if err == nil {
				p.Close()
				t.Fatal("a made-up code paired")
			}
		}
	}
	shows := func(when string, count int) {
		t.Helper()
		for _, args := range [][]string{{"browser", "clients"}, {"browser", "ls"}} {
			code, out, errOut := svcctl(t, d, args...)
			if code != 0 || !regexp.MustCompile(fmt.Sprintf(`(?m)^\s+count:\s+%d$`, count)).MatchString(out) || !strings.Contains(out, "pairing code unknown or already used") || !strings.Contains(out, "client:unpaired-ext") {
				t.Fatalf("%s: svcctl %s: %d\n%s\n%s", when, strings.Join(args, " "), code, out, errOut)
			}
		}
		if panel := string(d.Do("GET", "/v1/status/ui", nil).Body); !strings.Contains(panel, fmt.Sprintf("%d hellos refused at pairing", count)) {
			t.Fatalf("%s: the panel lacks the count", when)
		}
	}
	refuse(3, "unpaired-ext")
	// The refusals reach raft on the next flush (once a second); once the
	// daemon says none is unflushed, a SIGKILL loses nothing.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var env struct {
			Data struct {
				Pairing struct {
					Refused struct {
						Count     int64 `json:"count"`
						Unflushed int64 `json:"unflushed"`
					} `json:"refused"`
				} `json:"pairing"`
			} `json:"data"`
		}
		d.Do("GET", "/v1/browser/clients", nil).Decode(t, &env)
		if r := env.Data.Pairing.Refused; r.Count == 3 && r.Unflushed == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refusals were not flushed to raft within 10 s: %+v", env.Data.Pairing.Refused)
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.Restart()
	shows("after SIGKILL", 3)
	refuse(2, "unpaired-ext")
	if err := d.Terminate(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	d.Restart()
	shows("after a graceful stop", 5)
}
