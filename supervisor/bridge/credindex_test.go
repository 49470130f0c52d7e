package bridge

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/raftstore"
)

// stateHost is a Host over a state the test changes; reads counts
// the walks of it.
type stateHost struct {
	nopHost
	state   raftstore.State
	version uint64
	reads   int
}

func (h *stateHost) Read(fn func(*raftstore.State)) { h.reads++; fn(&h.state) }
func (h *stateHost) ReadVersioned(fn func(*raftstore.State)) uint64 {
	h.Read(fn)
	return h.version
}
func (h *stateHost) StateVersion() uint64 { return h.version }

func (h *stateHost) put(client, platform, account string, credsAt time.Time, fingerprint string) string {
	if h.state.Browser.Records == nil {
		h.state.Browser.Records = map[string]*raftstore.BrowserRecord{}
	}
	key := raftstore.RecordKey(client, platform, account)
	h.state.Browser.Records[key] = &raftstore.BrowserRecord{Key: key, ClientID: client, Platform: platform,
		Account: account, CredentialFingerprint: fingerprint, CredentialsAt: credsAt}
	h.version++
	return key
}

// TestCredentialedFollowsStateVersion: the index is read once per state
// version and always names each client's newest credentialed record.
func TestCredentialedFollowsStateVersion(t *testing.T) {
	host := &stateHost{}
	h := New(Config{}, host, hclog.NewNullLogger())
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	old := host.put("c1", "platform_a", "me", t0, "fp1")
	host.put("c1", "platform_b", "me", t0.Add(time.Hour), "")            // no credentials: never picked
	c2 := host.put("c2", "platform_a", "you", t0.Add(-time.Hour), "fp2") // another client

	want := func(platform string, exp map[string]string) {
		t.Helper()
		got := h.credentialed(platform)
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Fatalf("%s: credentialed %v, want %v", platform, got, exp)
		}
	}
	want("platform_a", map[string]string{"c1": old, "c2": c2})
	want("platform_b", map[string]string{})
	if host.reads != 1 {
		t.Fatalf("%d walks of one state version, want 1", host.reads)
	}
	newer := host.put("c1", "platform_a", "other", t0.Add(time.Minute), "fp3")
	want("platform_a", map[string]string{"c1": newer, "c2": c2})
	if host.reads != 2 {
		t.Fatalf("%d walks after one change, want 2", host.reads)
	}
}

// BenchmarkCredentialed: Pick's credentialed lookup over 2048 records
// (the state's bound; 7 clients), against walking them per request as before.
func BenchmarkCredentialed(b *testing.B) {
	host := &stateHost{}
	t0 := time.Now()
	for i := 0; i < 2048; i++ {
		host.put(fmt.Sprintf("c%d", i%7), []string{"platform_a", "platform_b"}[i%2], fmt.Sprintf("acct%d", i), t0.Add(time.Duration(i)), "fp")
	}
	h := New(Config{}, host, hclog.NewNullLogger())
	b.Run("baseline_walk", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var idx *credIndex
			host.Read(func(s *raftstore.State) { idx = buildCredIndex(s) })
			if len(idx.byPlatform["platform_a"]) != 7 {
				b.Fatal("index")
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if len(h.credentialed("platform_a")) != 7 {
				b.Fatal("index")
			}
		}
	})
}
