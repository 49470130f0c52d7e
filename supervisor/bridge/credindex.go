package bridge

import (
	"sync/atomic"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// Which record of each client holds the newest captured credentials, per
// platform, changes only when the FSM state does, yet Pick needs it on
// every relayed request and finding it walks every browser record (up to
// 2048). So it is kept, for all platforms at once, with the state version
// it was read at (performance, issue 15 third pass), and read again only
// after the state moved: a request then does O(clients) work.

// credIndex maps platform → clientId → key of that client's newest
// credentialed record, as of version. It is never changed once built.
type credIndex struct {
	version    uint64
	byPlatform map[string]map[string]string
}

// credCache holds the newest credIndex.
type credCache struct{ cur atomic.Pointer[credIndex] }

// credentialed maps clientId to the key of its newest record with captured
// credentials on platform. A reconnecting plugin's persisted records count.
// The map is shared: callers must not change it.
func (h *Hub) credentialed(platform string) map[string]string {
	return h.credIndexNow().byPlatform[platform]
}

// credIndexNow is the credential index as of the current state version.
func (h *Hub) credIndexNow() *credIndex {
	if idx := h.creds.cur.Load(); idx != nil && idx.version == h.host.StateVersion() {
		return idx
	}
	var idx *credIndex
	version := h.host.ReadVersioned(func(s *raftstore.State) { idx = buildCredIndex(s) })
	idx.version = version
	h.creds.cur.Store(idx)
	return idx
}

// buildCredIndex walks every record once; for each platform and client the
// record with the latest CredentialsAt wins.
func buildCredIndex(s *raftstore.State) *credIndex {
	idx := &credIndex{byPlatform: map[string]map[string]string{}}
	type slot struct{ platform, client string }
	at := map[slot]time.Time{}
	for key, r := range s.Browser.Records {
		if r.CredentialFingerprint == "" {
			continue
		}
		clients := idx.byPlatform[r.Platform]
		if clients == nil {
			clients = map[string]string{}
			idx.byPlatform[r.Platform] = clients
		}
		k := slot{r.Platform, r.ClientID}
		if prev, ok := at[k]; !ok || r.CredentialsAt.After(prev) {
			clients[r.ClientID], at[k] = key, r.CredentialsAt
		}
	}
	return idx
}
