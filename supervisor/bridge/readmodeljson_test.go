package bridge

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
	"github.com/svcd/svcd/raftstore/raftstoretest"
	"github.com/svcd/svcd/shared/api"

	"github.com/svcd/svcd/shared/jsoncache/jsoncachetest"
)

// Every field of a record view (through its timestamps, endpoint
// metadata and last action result), a client view and a target's
// diagnostics takes part in their Same, and their clones share nothing
// with the original.
func TestReadModelEntriesSameSeeEveryField(t *testing.T) {
	jsoncachetest.SameSeesEveryField(t, sameRecordView, cloneRecordView)
	jsoncachetest.SameSeesEveryField(t, sameClientView, cloneClientView)
	jsoncachetest.SameSeesEveryField(t, sameTargetDiag, cloneTargetDiag)
}

// A read model with every field set (found by reflection, so a field
// added later is covered) is written by AppendJSON as encoding/json
// writes it, twice (the second time from kept entries).
func TestReadModelJSONIsEncodingJSON(t *testing.T) {
	m := jsoncachetest.Filled[ReadModel]()
	m.ShellRuntime = []byte(`{"a": [1, 2]}`) // not compact: encoding/json compacts it
	kept := NewReadModelJSON()
	for range 2 {
		got, err := m.AppendJSON(nil, kept)
		want, _ := api.AppendJSON(nil, &m)
		if err != nil || string(got) != string(want) {
			t.Fatalf("%v\nAppendJSON     %s\napi.AppendJSON %s", err, got, want)
		}
	}
}

// nodeHost is a Host over a real single-node raft store (the FSM keeps
// the record index and the state version).
type nodeHost struct {
	nopHost
	n *raftstore.Node
}

func (h nodeHost) Apply(ctx context.Context, typ string, p any) (any, error) {
	return h.n.Apply(ctx, typ, p)
}
func (h nodeHost) Read(fn func(*raftstore.State))                 { h.n.Read(fn) }
func (h nodeHost) ReadVersioned(fn func(*raftstore.State)) uint64 { return h.n.ReadVersioned(fn) }
func (h nodeHost) StateVersion() uint64                           { return h.n.StateVersion() }

// ReadModel.AppendJSON writes what api.AppendJSON writes for the read
// model, after each of hundreds of random commands that change the
// records and clients behind it (captures, endpoints, connects and
// disconnects, shell runtimes, action results, flushed and unflushed
// activity), with time moving their statuses: kept records are never
// served from before a change.
func TestReadModelJSONNeverStale(t *testing.T) {
	host := nodeHost{n: raftstoretest.Node(t)}
	h := New(Config{StaleAfter: time.Second, LostAfter: 30 * time.Millisecond}, host, hclog.NewNullLogger())
	kept := NewReadModelJSON()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(24, 4))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	var keys []string
	for step := 0; step < 600; step++ {
		client := pick("c0", "c1", "c2")
		ref := raftstore.RecordRef{ClientID: client, Browser: pick("", "chromium"), Platform: pick("platform_a", "platform_b"),
			Account: pick("me", "you", "<them> & co"), Host: pick("", "a.example.test")}
		var err error
		switch rng.IntN(8) {
		case 0:
			_, err = host.Apply(ctx, raftstore.CmdBrowserCredentials, raftstore.BrowserCredentials{RecordRef: ref,
				Fingerprint: "sha256:" + strings.Repeat(pick("a", "b"), 64), HeaderNames: []string{"authorization", "x-\u2028"}[:rng.IntN(3)],
				HeaderCount: rng.IntN(3), CookieCount: rng.IntN(3)})
			keys = append(keys, raftstore.RecordKey(ref.ClientID, ref.Platform, ref.Account))
		case 1:
			_, err = host.Apply(ctx, raftstore.CmdBrowserEndpoints, raftstore.BrowserEndpoints{RecordRef: ref,
				Endpoints: []raftstore.BrowserEndpoint{{Method: pick("GET", "POST"), Path: "/api", Kind: pick("", "chat"), Streaming: rng.IntN(2) == 0}}[:rng.IntN(2)]})
		case 2:
			_, err = host.Apply(ctx, raftstore.CmdBrowserClient, raftstore.BrowserClientEvent{ClientID: client, Browser: pick("chromium", "firefox"),
				Event: pick("connect", "disconnect"), ShellRuntime: []byte(pick(`{"v":1}`, `{"v":2}`, ``))})
		case 3:
			_, err = host.Apply(ctx, raftstore.CmdBrowserActionResult, raftstore.StoredActionResult{ActionID: "a1", Action: pick("reload", "focus"),
				ClientID: client, Accepted: true, Result: []byte(pick(`{"ok":true}`, `null`))})
		case 4: // activity, unflushed then maybe flushed
			if len(keys) > 0 {
				h.activity.touchRecord(keys[rng.IntN(len(keys))], time.Now(), pick("relay", "action"))
			}
			if rng.IntN(2) == 0 {
				h.flushActivity(ctx)
			}
		default: // only a read, a moment later
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		relay := RelayInfo{Available: true, Defaults: map[string]int{"max": 3}, Live: map[string]RelayLive{}, Targets: map[string]raftstore.RelayTarget{}}
		for _, key := range keys[:min(len(keys), rng.IntN(4))] { // the engine's own state, and a target without a record
			relay.Targets[key] = raftstore.RelayTarget{Target: key, WindowCount: rng.IntN(3), Breaker: pick("closed", "open")}
			relay.Live[key] = RelayLive{InFlight: rng.IntN(2)}
			relay.Targets["platform_c/"+client+"/x"] = raftstore.RelayTarget{Target: "platform_c", LastStatus: 200}
		}
		m := h.ReadPage(Filter{}, Page{Limit: 1 + rng.IntN(12)}, relay)
		got, err := m.AppendJSON([]byte("x"), kept)
		want, _ := api.AppendJSON([]byte("x"), &m)
		if err != nil || string(got) != string(want) {
			t.Fatalf("step %d: %v\nAppendJSON     %s\napi.AppendJSON %s", step, err, got, want)
		}
	}
	if len(keys) == 0 {
		t.Fatal("no record was captured")
	}
}
