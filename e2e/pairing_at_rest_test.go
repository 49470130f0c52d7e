package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
)

// legacySnapshot is a snapshot file written by svcd before issue 34 (commit
// a72cca5, `GET /v1/snapshot`): format version 1, a bare SHA-256 trailer,
// and the client legacy-client paired with a code, its credential stored
// as an unkeyed SHA-256. legacyCredential is that test credential.
const (
	legacySnapshot   = "testdata/snapshot-v1-unauthenticated.snap"
	legacyCredential = "svcb_0Y5KZxHb4VFvIqRbq4iLy0A9A-zGeFzygNx-PXV0938"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Issue 34 §3: a leaked snapshot or raft.db gives nothing back. A pending
// code and a paired client's credential are stored as keyed hashes: the
// SHA-256 of either (what anyone can compute from a 40-bit code space)
// appears neither in a snapshot file nor in raft.db.
func TestStoredPairingHashesAreKeyed(t *testing.T) {
	d := startBrowserDaemon(t, "SVC_BROWSER_PAIRING=codes")
	p := dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Code: issueCode(t, d, nil), ClientID: "at-rest-1"})
	cred := p.HelloOK().Credential
	pending := issueCode(t, d, nil)
	snap := d.DoAuth("GET", "/v1/snapshot", nil)
	if snap.Status != 200 {
		t.Fatalf("snapshot: %d %s", snap.Status, snap.Body)
	}
	raftDB, err := os.ReadFile(filepath.Join(d.DataDir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	for what, h := range map[string]string{"the pending code": sha256Hex(strings.ReplaceAll(pending, "-", "")), "the credential": sha256Hex(cred)} {
		for where, b := range map[string][]byte{"the snapshot": snap.Body, "raft.db": raftDB} {
			if strings.Contains(string(b), h) {
				t.Errorf("%s holds the SHA-256 of %s", where, what)
			}
		}
	}
	if !strings.Contains(string(snap.Body), `"keyed":true`) {
		t.Errorf("the snapshot's pairing entries are not marked keyed")
	}
}

// Migration (issue 34 §2): a credential stored as a bare SHA-256 by an
// older svcd (restored from its snapshot file, committed as testdata)
// still pairs, and is re-keyed at that hello: the next snapshot no longer
// holds its SHA-256.
func TestLegacyCredentialHashStillPairsAndIsRekeyed(t *testing.T) {
	file, err := os.ReadFile(legacySnapshot)
	if err != nil {
		t.Fatal(err)
	}
	d := startBrowserDaemon(t, "SVC_BROWSER_PAIRING=codes")
	if r := d.DoAuth("POST", "/v1/snapshot/restore?force=true", file, "Content-Type: "+snapType); r.Status != 200 {
		t.Fatalf("restore of the legacy snapshot: %d %s", r.Status, r.Body)
	}
	p := dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Credential: legacyCredential, ClientID: "legacy-client"})
	p.Close()
	waitUntil(t, 10*time.Second, "the legacy hash re-keyed", func() bool {
		snap := d.DoAuth("GET", "/v1/snapshot", nil)
		return snap.Status == 200 && !strings.Contains(string(snap.Body), sha256Hex(legacyCredential))
	})
	// And the re-keyed credential pairs again.
	dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Credential: legacyCredential, ClientID: "legacy-client"}).Close()
}
