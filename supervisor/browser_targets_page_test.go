package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/svcd/svcd/raftstore"
)

// A page of GET /v1/browser asks the relay engine for its own range of
// target keys only. Many targets — one per record, persisted through
// relay.save, and more without a record between them — walked in pages:
// each target is on exactly one page, inside that page's range of record
// keys, with its own relay state (persisted, or the engine's newer one) and
// its own live counters; none is lost or taken from a neighbour.
func TestBrowserPagesJoinEachTargetsState(t *testing.T) {
	s, hs := newTestServer(t)
	ctx := context.Background()
	want := map[string]int64{} // target key -> its admitted count
	var save raftstore.RelaySave
	for i := 0; i < 150; i++ {
		key := addBrowserRecord(t, s, fmt.Sprintf("client-%d", i%6), fmt.Sprintf("user%03d@example.test", i))
		save.Targets = append(save.Targets, raftstore.RelayTarget{Target: key, Breaker: raftstore.BreakerClosed, Admitted: int64(1000 + i), WindowCount: i % 5})
		want[key] = int64(1000 + i)
		if i%3 == 0 { // a raw relay to a platform the client never captured: a target without a record
			raw := raftstore.RecordKey(fmt.Sprintf("client-%d", i%6), "platform_b", fmt.Sprintf("user%03d@example.test", i))
			save.Targets = append(save.Targets, raftstore.RelayTarget{Target: raw, Breaker: raftstore.BreakerOpen, Admitted: int64(5000 + i)})
			want[raw] = int64(5000 + i)
		}
	}
	if _, err := s.node.Apply(ctx, raftstore.CmdRelaySave, save); err != nil {
		t.Fatal(err)
	}
	// The engine starts from the persisted state (as a new relay worker
	// does); then every fourth target is admitted once and not reported:
	// the engine is ahead of the FSM (admitted + 1) and the target has one
	// request in flight.
	if err := s.browser.relay.Restore(ctx, s.persistedRelayStates()); err != nil {
		t.Fatal(err)
	}
	// Saved after the restore: in the FSM only (the engine has not met
	// them), so the page shows their persisted state.
	var later raftstore.RelaySave
	for i := 0; i < 40; i++ {
		key := raftstore.RecordKey(fmt.Sprintf("client-%d", i%6), "platform_c", fmt.Sprintf("later%02d", i))
		later.Targets = append(later.Targets, raftstore.RelayTarget{Target: key, Breaker: raftstore.BreakerHalfOpen, Admitted: int64(9000 + i)})
	}
	if _, err := s.node.Apply(ctx, raftstore.CmdRelaySave, later); err != nil {
		t.Fatal(err)
	}
	inFlight := map[string]bool{}
	n := 0
	for key := range want {
		if n++; n%4 != 0 {
			continue
		}
		if d, err := s.browser.relay.Admit(ctx, key); err != nil || !d.Allowed {
			t.Fatalf("admit %s: %+v %v", key, d, err)
		}
		want[key]++
		inFlight[key] = true
	}

	type target struct {
		Relay *struct {
			Target   string `json:"target"`
			Admitted int64  `json:"admitted"`
		} `json:"relay"`
		InFlight int `json:"in_flight"`
	}
	var page struct {
		Data struct {
			Records []struct {
				Key string `json:"key"`
			} `json:"records"`
			Policy struct {
				RelayAvailable bool              `json:"relay_available"`
				Targets        map[string]target `json:"targets"`
			} `json:"policy"`
			NextCursor *string `json:"next_cursor"`
		} `json:"data"`
	}
	for i, rt := range later.Targets {
		want[rt.Target] = int64(9000 + i)
	}
	seen := map[string]int{}
	cursor, after := "", ""
	for pages := 0; ; pages++ {
		u := hs.URL + "/v1/browser?limit=7"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		page.Data.NextCursor, page.Data.Policy.Targets = nil, nil
		if code := authJSON(t, u, &page); code != 200 || !page.Data.Policy.RelayAvailable || pages > 40 {
			t.Fatalf("page %d: %d, relay_available %v", pages, code, page.Data.Policy.RelayAvailable)
		}
		through := page.Data.Records[len(page.Data.Records)-1].Key
		for key, d := range page.Data.Policy.Targets {
			seen[key]++
			if key <= after || page.Data.NextCursor != nil && key > through {
				t.Errorf("page %d (%q, %q]: target %s outside it", pages, after, through, key)
			}
			if _, ok := want[key]; !ok {
				continue // a record's diagnostics only (no relay state): none here
			}
			if d.Relay == nil || d.Relay.Target != key || d.Relay.Admitted != want[key] {
				b, _ := json.Marshal(d)
				t.Errorf("page %d: target %s: %s, want its own relay state (admitted %d)", pages, key, b, want[key])
			}
			if got := d.InFlight == 1; got != inFlight[key] {
				t.Errorf("page %d: target %s in_flight %d, want in flight %v", pages, key, d.InFlight, inFlight[key])
			}
		}
		if page.Data.NextCursor == nil {
			break
		}
		cursor, after = *page.Data.NextCursor, through
	}
	for key := range want {
		if seen[key] != 1 {
			t.Errorf("target %s on %d pages, want 1", key, seen[key])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d targets on the pages, want %d", len(seen), len(want))
	}
}
