package raftstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// msgFSM drives conv.message commands through the FSM's Apply (raft's path).
type msgFSM struct {
	t   *testing.T
	f   *fsm
	idx uint64
}

func (m *msgFSM) report(conv, id string, at time.Time) ConvMessageResult {
	m.t.Helper()
	m.idx++
	p, _ := json.Marshal(ConvMessage{ConvLink: ConvLink{LocalID: conv, Platform: "platform_a", RemoteID: "r-" + conv}, MessageID: id})
	b, _ := json.Marshal(Command{Type: CmdConvMessage, At: at, Payload: p})
	res := m.f.Apply(&raft.Log{Index: m.idx, Data: b}).(applyResult)
	if res.err != nil {
		m.t.Fatalf("conv.message %s/%s: %v", conv, id, res.err)
	}
	return res.value.(ConvMessageResult)
}

// snapshotRestore persists f's snapshot and restores it into a new FSM.
func snapshotRestore(t *testing.T, f *fsm) (*fsm, []byte) {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink bufSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	return g, sink.Bytes()
}

// The finding of the chaos run (docs/reliability.md, finding 4): a reply
// reported again after 64 newer ones was taken as new. Now it is a repeat
// after any number of newer replies, in the restored FSM too, and only in
// its own conversation.
func TestMessageIsARepeatAfterManyNewerRepliesAndAfterRestore(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	m := &msgFSM{t: t, f: newFSM()}
	if r := m.report("c1", "m-0", at); r.Repeat || r.Refused != "" {
		t.Fatalf("first report: %+v", r)
	}
	for i := 1; i <= 500; i++ {
		if r := m.report("c1", fmt.Sprintf("m-%d", i), at.Add(time.Duration(i)*time.Second)); r.Repeat {
			t.Fatalf("m-%d taken as a repeat", i)
		}
	}
	if r := m.report("c1", "m-0", at.Add(time.Hour)); !r.Repeat || r.Count != 1 {
		t.Fatalf("m-0 after 500 newer replies: %+v, want a repeat", r)
	}
	if r := m.report("c2", "m-0", at.Add(time.Hour)); r.Repeat {
		t.Fatalf("the same id in another conversation is a repeat: %+v", r)
	}
	g, snap := snapshotRestore(t, m.f)
	if !bytes.Contains(snap, []byte(`"seen_messages":{"retention_seconds":604800,"count":502,`)) {
		t.Fatalf("snapshot's seen_messages: %.300s", snap[bytes.Index(snap, []byte(`"seen_messages"`)):])
	}
	m.f = g
	for _, id := range []string{"m-0", "m-1", "m-250"} {
		if r := m.report("c1", id, at.Add(2*time.Hour)); !r.Repeat {
			t.Fatalf("%s after restore: %+v, want a repeat", id, r)
		}
	}
	if r := m.report("c1", "m-501", at.Add(2*time.Hour)); r.Repeat {
		t.Fatalf("a new id after restore is a repeat: %+v", r)
	}
}

// An id is remembered for SeenMessageRetention from when it was first seen,
// not longer: after that (and more than 64 newer replies) it is new again.
func TestSeenMessageExpiresAfterTheRetention(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	m := &msgFSM{t: t, f: newFSM()}
	m.report("c1", "old", at)
	for i := 0; i < 70; i++ {
		m.report("c1", fmt.Sprintf("n-%d", i), at.Add(time.Minute))
	}
	if r := m.report("c1", "old", at.Add(SeenMessageRetention-time.Second)); !r.Repeat {
		t.Fatalf("within the retention: %+v, want a repeat", r)
	}
	m.report("c1", "later", at.Add(SeenMessageRetention+time.Hour)) // expires "old" and the n-*
	m.f.mu.RLock()
	n := m.f.state.SeenMessages.Len()
	m.f.mu.RUnlock()
	if n != 1 {
		t.Fatalf("%d ids remembered after the retention, want 1 (later)", n)
	}
	if r := m.report("c1", "old", at.Add(SeenMessageRetention+2*time.Hour)); r.Repeat {
		t.Fatalf("after the retention: %+v, want new", r)
	}
}

// At MaxSeenMessages a new id is refused and nothing changes; a repeat is
// still a repeat; once old ids expire, new ones are taken again.
func TestSeenMessagesRefuseAtTheCap(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	m := &msgFSM{t: t, f: newFSM()}
	m.report("c1", "first", at)
	m.f.mu.Lock()
	for i := 1; i < MaxSeenMessages; i++ {
		if err := m.f.state.SeenMessages.add("bulk", fmt.Sprint(i), at.Add(time.Hour)); err != nil {
			m.f.mu.Unlock()
			t.Fatal(err)
		}
	}
	m.f.mu.Unlock()
	before, _ := json.Marshal(m.f.state)
	r := m.report("c9", "new", at.Add(2*time.Hour))
	if r.Refused == "" || r.Repeat || !strings.Contains(r.Refused, "262144 message ids") {
		t.Fatalf("a new id at the cap: %+v, want refused", r)
	}
	after, _ := json.Marshal(m.f.state)
	if !bytes.Equal(before, after) {
		t.Fatal("a refused message changed the state")
	}
	if r := m.report("c1", "first", at.Add(2*time.Hour)); !r.Repeat {
		t.Fatalf("a repeat at the cap: %+v", r)
	}
	// "first" expires (the bulk, an hour younger, not yet): room for one.
	if r := m.report("c9", "new", at.Add(SeenMessageRetention+30*time.Minute)); r.Refused != "" || r.Repeat {
		t.Fatalf("after the oldest id expired: %+v, want taken", r)
	}
	if r := m.report("c9", "newer", at.Add(SeenMessageRetention+31*time.Minute)); r.Refused == "" {
		t.Fatalf("the cap is full again: %+v, want refused", r)
	}
}

// A snapshot written before seen_messages existed (the conversations' own
// last 64 ids only) loads; those ids are repeats, and are kept as such
// after the next snapshot, however many replies follow.
func TestOldSnapshotWithoutSeenMessagesLoads(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	m := &msgFSM{t: t, f: newFSM()}
	for i := 0; i < 10; i++ {
		m.report("c1", fmt.Sprintf("m-%d", i), at)
	}
	_, snap := snapshotRestore(t, m.f)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(snap, &raw); err != nil {
		t.Fatal(err)
	}
	delete(raw, "seen_messages") // what an older build wrote
	old, _ := json.Marshal(raw)
	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(old))); err != nil {
		t.Fatalf("old snapshot: %v", err)
	}
	m.f = g
	for i := 0; i < 100; i++ {
		m.report("c1", fmt.Sprintf("x-%d", i), at.Add(time.Minute)) // pushes m-* out of the 64
	}
	m.f, _ = snapshotRestore(t, m.f)
	if r := m.report("c1", "m-3", at.Add(time.Hour)); !r.Repeat {
		t.Fatalf("an id of the old snapshot: %+v, want a repeat", r)
	}
}

// A corrupt seen_messages is refused on restore, not half-loaded.
func TestSeenMessagesSnapshotDecodeRefusesBadEntries(t *testing.T) {
	for _, bad := range []string{
		`{"retention_seconds":604800,"count":2,"entries":"AAAAAAAAAAEAAAAB"}`,
		`{"retention_seconds":604800,"count":1,"entries":"AAAAAAAAAAEAAAA"}`,
		`{"retention_seconds":604800,"count":1,"entries":"!!"}`,
	} {
		var s SeenMessagesState
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Fatalf("%s decoded", bad)
		}
	}
	var s SeenMessagesState
	if err := json.Unmarshal([]byte(`{"retention_seconds":604800,"count":1,"entries":"AAAAAAAAAAEAAAAB"}`), &s); err != nil || s.Len() != 1 {
		t.Fatalf("one entry: %v %d", err, s.Len())
	}
}

// The snapshot form of seen_messages from any bytes: refused, or decoded
// into a set that encodes back to the same set.
func FuzzSeenMessagesDecode(f *testing.F) {
	f.Add([]byte(`{"retention_seconds":604800,"count":1,"entries":"AAAAAAAAAAEAAAAB"}`))
	f.Add([]byte(`{"retention_seconds":604800,"count":0,"entries":""}`))
	f.Add([]byte(`{"count":2,"entries":"AAAAAAAAAAEAAAAB"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s SeenMessagesState
		if err := json.Unmarshal(data, &s); err != nil {
			return
		}
		s.normalize(nil)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var again SeenMessagesState
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatalf("re-decode %s: %v", b, err)
		}
		again.normalize(nil)
		if again.Len() != s.Len() || len(again.index) != len(s.index) {
			t.Fatalf("round trip: %d/%d entries, want %d/%d", again.Len(), len(again.index), s.Len(), len(s.index))
		}
		for h := range s.index {
			if _, ok := again.index[h]; !ok {
				t.Fatalf("hash %x lost in the round trip", h)
			}
		}
	})
}
