package raftstore

import (
	"context"
	"strings"
	"testing"
	"time"
)

const testFP = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestBrowserRecordsPersistAndSurviveSnapshot(t *testing.T) {
	dir := t.TempDir()
	n := openTestNode(t, dir)
	ctx := context.Background()
	must := func(typ string, p any) any {
		t.Helper()
		v, err := n.Apply(ctx, typ, p)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		return v
	}
	must(CmdBrowserClient, BrowserClientEvent{ClientID: "c1", Browser: "chrome", Event: "connect"})
	rec := must(CmdBrowserCredentials, BrowserCredentials{RecordRef: RecordRef{ClientID: "c1", Platform: "platform_a", Account: "me"}, Fingerprint: testFP, HeaderNames: []string{"cookie"}, HeaderCount: 1}).(BrowserRecord)
	if rec.Key != RecordKey("c1", "platform_a", "me") || rec.CredentialFingerprint != testFP {
		t.Fatalf("record %+v", rec)
	}
	must(CmdBrowserEndpoints, BrowserEndpoints{RecordRef: RecordRef{ClientID: "c1", Platform: "platform_a", Account: "me"}, Endpoints: []BrowserEndpoint{{Method: "POST", Path: "/api"}}})
	must(CmdBrowserSweep, BrowserSweep{Sweeps: []Sweep{{Key: rec.Key, Status: StatusStale, At: time.Now()}}})
	must(CmdBrowserSweep, BrowserSweep{Sweeps: []Sweep{{Key: rec.Key, Status: StatusStale, At: time.Now()}}}) // no transition: not counted
	must(CmdBrowserClient, BrowserClientEvent{ClientID: "c1", Event: "disconnect"})
	must(CmdRelaySave, RelaySave{Targets: []RelayTarget{{Target: rec.Key, Breaker: BreakerOpen, BackoffLevel: 2}}})
	if _, err := n.Apply(ctx, CmdBrowserCredentials, BrowserCredentials{RecordRef: RecordRef{ClientID: "c1", Platform: "platform_a"}, Fingerprint: "raw-secret"}); err == nil || strings.Contains(err.Error(), "raw-secret") {
		t.Fatalf("bad fingerprint: %v", err)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	n.Shutdown()

	n = openTestNode(t, dir)
	defer n.Shutdown()
	if err := n.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	n.Read(func(s *State) {
		r := s.Browser.Records[rec.Key]
		if r == nil || len(r.Endpoints) != 1 || r.StaleSweepCount != 1 || r.LastStaleSweepStatus != StatusStale {
			t.Fatalf("record after restart: %+v", r)
		}
		if c := s.Browser.Clients["c1"]; c == nil || c.Connected || c.LastDisconnectedAt.IsZero() {
			t.Fatalf("client after restart: %+v", c)
		}
		if rt := s.Relay.Targets[rec.Key]; rt == nil || rt.Breaker != BreakerOpen || rt.BackoffLevel != 2 {
			t.Fatalf("relay after restart: %+v", rt)
		}
	})
}

func TestEvictOldestIsDeterministic(t *testing.T) {
	base := time.Unix(0, 0)
	m := map[string]time.Time{"b": base, "a": base, "c": base.Add(time.Second)}
	evictOldest(m, 1, func(t time.Time) time.Time { return t })
	if _, ok := m["c"]; !ok || len(m) != 1 {
		t.Fatalf("kept %v", m)
	}
}
