package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/harness"
)

// Issue 33: reads that never go back in time. Every test here failed on the
// code before linearizable reads (see the commit message for what each saw).

// stateRead is one GET /v1/system/state as a client sees it.
type stateRead struct {
	status  int
	code    string // error code on a non-200 answer
	message string // and its message
	version float64
	header  http.Header
	err     error // no answer at all (connection refused while down)
}

// getStateAt reads the system state at base+path with client.
func getStateAt(client *http.Client, base, path string, headers ...string) stateRead {
	req, _ := http.NewRequest("GET", base+path, nil)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := client.Do(req)
	if err != nil {
		return stateRead{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var env struct {
		Data struct {
			Version float64 `json:"version"`
		} `json:"data"`
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(b, &env)
	return stateRead{status: resp.StatusCode, code: env.Error.Code, message: env.Error.Message, version: env.Data.Version, header: resp.Header}
}

// currentStateAt is getStateAt as a well-behaved client reads (docs/ha.md
// "What a client should retry"): a read refused with a 503 the docs say to
// retry — catching_up (the node could not show within a second that it had
// applied the read index), or no_leader / leader_unreachable / not_leader
// (on a loaded machine a heartbeat round can miss, and the leader cannot
// confirm it leads) — is asked again after a pause, for at most 20 s. It
// never turns an old answer into a current one: a 200 is returned as it
// came. retried counts the refusals by code.
func currentStateAt(client *http.Client, base, path string, retried map[string]int) stateRead {
	r := getStateAt(client, base, path)
	for deadline := time.Now().Add(20 * time.Second); r.status == 503 && retryableRead(r.code) && time.Now().Before(deadline); {
		retried[r.code]++
		time.Sleep(200 * time.Millisecond)
		r = getStateAt(client, base, path)
	}
	return r
}

// retryableRead says whether code is a 503 docs/ha.md tells a client to retry.
func retryableRead(code string) bool {
	switch code {
	case "catching_up", "starting", "no_leader", "leader_unreachable", "not_leader":
		return true
	}
	return false
}

// setMode writes a mode through d and returns the version its answer shows
// (0 when the write was not acknowledged).
func setMode(client *http.Client, d *harness.Daemon, mode string) float64 {
	req, _ := http.NewRequest("POST", d.URL+"/v1/system/mode", strings.NewReader(`{"mode":"`+mode+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0
	}
	var env struct {
		Data struct {
			Version float64 `json:"version"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&env) != nil {
		return 0
	}
	return env.Data.Version
}

// A read on the standby right after a write forwarded through it returned
// includes that write (the old code answered from the standby's FSM, which
// had often not yet applied it: one version back).
func TestHAStandbyReadSeesItsForwardedWrite(t *testing.T) {
	t.Parallel()
	c := startHACluster(t)
	client := &http.Client{Timeout: 5 * time.Second}
	behind, retried := 0, map[string]int{}
	defer func() { t.Logf("reads asked again after a 503: %v", retried) }()
	for i := 0; i < 200; i++ {
		v := setMode(client, c.n2, []string{"paused", "running"}[i%2])
		if v == 0 {
			t.Fatalf("write %d through the standby was not acknowledged", i)
		}
		// Under load the standby may not apply the write within its 1 s
		// read wait, or the leader may fail to confirm its lead: the read
		// is then refused (503) rather than answered old, and a client
		// asks again. A 200 must include the write.
		r := currentStateAt(client, c.n2.URL, "/v1/system/state", retried)
		if r.status != 200 {
			t.Fatalf("read %d on the standby: %d %s: %s", i, r.status, r.code, r.message)
		}
		if r.version < v {
			behind++
			t.Errorf("read %d on the standby: version %v, its own acknowledged write was %v", i, r.version, v)
		}
		if behind > 5 {
			t.FailNow()
		}
	}
}

// ?stale answers at once from the node's own FSM and says how current it
// is; a consistent read on a node that cannot reach a quorum answers 503
// instead of an old state.
func TestHAStaleReadAnswersAtOnceWithItsLag(t *testing.T) {
	t.Parallel()
	c := startHACluster(t)
	client := &http.Client{Timeout: 5 * time.Second}
	v := setMode(client, c.n1, "paused")
	if v == 0 {
		t.Fatal("write not acknowledged")
	}
	// With a leader: both modes answer, the stale one with its headers.
	waitUntil(t, 5*time.Second, "the standby to apply the write", func() bool {
		return getStateAt(client, c.n2.URL, "/v1/system/state?stale").version >= v
	})
	r := getStateAt(client, c.n2.URL, "/v1/system/state?stale")
	if r.status != 200 || r.header.Get("X-Svcd-Known-Leader") != "true" || r.header.Get("X-Svcd-Behind") == "" {
		t.Fatalf("stale read with a leader: %d, headers %v", r.status, r.header)
	}
	if ms, err := strconv.Atoi(r.header.Get("X-Svcd-Last-Contact")); err != nil || ms < 0 || ms > 5000 {
		t.Fatalf("stale read with a leader: X-Svcd-Last-Contact %q", r.header.Get("X-Svcd-Last-Contact"))
	}
	if h := getStateAt(client, c.n2.URL, "/v1/system/state", "X-Svcd-Consistency: stale"); h.status != 200 || h.header.Get("X-Svcd-Known-Leader") == "" {
		t.Fatalf("stale read by header: %d, headers %v", h.status, h.header)
	}
	// No quorum for n2: the leader and the witness are gone.
	c.n1.Kill()
	c.KillWitness()
	waitUntil(t, 10*time.Second, "n2 to see no leader", func() bool {
		return getStateAt(client, c.n2.URL, "/v1/system/state?stale").header.Get("X-Svcd-Known-Leader") == "false"
	})
	start := time.Now()
	r = getStateAt(client, c.n2.URL, "/v1/system/state?stale")
	if took := time.Since(start); took > time.Second {
		t.Errorf("stale read without a leader took %v", took)
	}
	if r.status != 200 || r.version != v {
		t.Fatalf("stale read without a leader: %d %s version %v (want %v)", r.status, r.code, r.version, v)
	}
	if ms, err := strconv.Atoi(r.header.Get("X-Svcd-Last-Contact")); err != nil || ms <= 0 {
		t.Fatalf("stale read without a leader: X-Svcd-Last-Contact %q, want the time since it last heard one", r.header.Get("X-Svcd-Last-Contact"))
	}
	// The default read does not pretend: it cannot prove it is current.
	if d := getStateAt(client, c.n2.URL, "/v1/system/state"); d.status != 503 {
		t.Fatalf("consistent read without a leader: %d version %v, want 503", d.status, d.version)
	}
}

// A leader killed right after it acknowledged a write: the new leader's
// first answer includes that write (the old code let the standby, leader
// or not, answer from an FSM that had not applied it).
func TestHANewLeaderFirstReadIncludesTheLastAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	c := startHACluster(t)
	client := &http.Client{Timeout: 3 * time.Second}
	leader, other := c.n1, c.n2
	for round := 0; round < 3; round++ {
		var last float64
		for i := 0; i < 30; i++ {
			if v := setMode(client, leader, []string{"paused", "running"}[i%2]); v > last {
				last = v
			}
		}
		if last == 0 {
			t.Fatalf("round %d: no write acknowledged", round)
		}
		leader.Kill()
		var first stateRead
		waitUntil(t, 10*time.Second, "a read answered after the kill", func() bool {
			first = getStateAt(client, other.URL, "/v1/system/state")
			return first.status == 200
		})
		if first.version < last {
			t.Fatalf("round %d: first read after the leader died shows version %v; %v was acknowledged before", round, first.version, last)
		}
		waitUntil(t, 10*time.Second, "the survivor to lead", func() bool { r, _ := role(t, other); return r == "leader" })
		leader.Restart()
		leader, other = other, leader
	}
}

// A node restarted with a long log to replay answers no state older than
// what clients were acknowledged before it went down: while it catches up
// a read is 503 (starting, catching_up, no_leader) or the port refuses,
// never version 0 (the old code answered from the empty or half-replayed
// FSM).
func TestHARestartedNodeAnswersNoStaleState(t *testing.T) {
	t.Parallel()
	c := startHACluster(t)
	client := &http.Client{Timeout: 3 * time.Second}
	// A long log: 1500 writes from four clients through the leader.
	var top atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 375; i++ {
				if v := int64(setMode(client, c.n1, []string{"paused", "running"}[(i+w)%2])); v > top.Load() {
					top.Store(v)
				}
			}
		}(w)
	}
	wg.Wait()
	acked := float64(top.Load())
	if acked < 1000 {
		t.Fatalf("only %v writes acknowledged", acked)
	}
	// n2 goes down, then the leader and the witness too: n2 comes back
	// alone, with its log and no one to learn the commit index from (the
	// old code answered from its empty FSM). Once it has answered 50 reads
	// the witness comes back: n2 wins with it, replays its log and must
	// then answer the current state.
	c.n2.Kill()
	c.n1.Kill()
	c.KillWitness()
	var answered atomic.Int64
	var witnessOnce sync.Once
	var (
		mu     sync.Mutex
		reads  []stateRead
		stop   = make(chan struct{})
		polled sync.WaitGroup
	)
	polled.Add(1)
	n2URL := c.n2.URL // Restart rewrites the field; the address stays
	go func() {
		defer polled.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			r := getStateAt(client, n2URL, "/v1/system/state")
			mu.Lock()
			reads = append(reads, r)
			mu.Unlock()
			if r.err == nil && answered.Add(1) == 50 {
				witnessOnce.Do(func() { go c.StartWitness(t) })
			}
			if r.err != nil {
				time.Sleep(2 * time.Millisecond)
			}
		}
	}()
	c.n2.Restart()
	waitUntil(t, 10*time.Second, "a current read on the restarted node", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reads) > 0 && reads[len(reads)-1].status == 200
	})
	close(stop)
	polled.Wait()
	counts := map[string]int{}
	for _, r := range reads {
		switch {
		case r.err != nil:
			counts["no answer"]++
		case r.status == 200 && r.version < acked:
			t.Errorf("restarted node answered version %v (%v acknowledged before)", r.version, acked)
			counts["stale"]++
		case r.status == 200:
			counts["current"]++
		case r.status == 503 && (r.code == "catching_up" || r.code == "starting" || r.code == "no_leader" || r.code == "leader_unreachable"):
			counts["503 "+r.code]++
		default:
			t.Errorf("restarted node answered %d %s", r.status, r.code)
		}
		if counts["stale"] > 5 {
			break
		}
	}
	t.Logf("reads while restarting: %v", counts)
}
