package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svcd/svcd/e2e/fakeplugin"
	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/raftstore/snapfile"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// editSnapshot rewrites file's payload with edit (on the decoded JSON) and
// writes it back with key (nil: format 1, what anyone can make).
func editSnapshot(t *testing.T, file []byte, key []byte, edit func(state map[string]any)) []byte {
	t.Helper()
	h, payload, err := snapfile.Read(bytes.NewReader(file), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(payload, &state); err != nil {
		t.Fatal(err)
	}
	edit(state)
	out, _ := json.Marshal(state)
	h.PayloadBytes = int64(len(out))
	var buf bytes.Buffer
	if err := snapfile.Write(&buf, h, bytes.NewReader(out), key); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type restoreResult struct {
	Data struct {
		Authenticated bool `json:"authenticated"`
		Credentials   struct {
			ClientsAdded           []string `json:"clients_added"`
			RevocationsKept        []string `json:"revocations_kept"`
			RevocationsUndone      []string `json:"revocations_undone"`
			UnauthenticatedDropped []string `json:"unauthenticated_dropped"`
			Warnings               []string `json:"warnings"`
		} `json:"credentials"`
	} `json:"data"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func restoreSnap(t *testing.T, d *harness.Daemon, file []byte, force bool) (int, restoreResult) {
	t.Helper()
	path := "/v1/snapshot/restore"
	if force {
		path += "?force=true"
	}
	r := d.DoAuth("POST", path, file, "Content-Type: "+snapType)
	var out restoreResult
	_ = json.Unmarshal(r.Body, &out)
	return r.Status, out
}

// plant adds a paired client with host-ops whose credential hash the
// attacker chose (issue 34 §4's attack).
func plant(state map[string]any) {
	p := state["pairing"].(map[string]any)
	clients, _ := p["clients"].(map[string]any)
	if clients == nil {
		clients = map[string]any{}
		p["clients"] = clients
	}
	clients["backdoor"] = map[string]any{"client_id": "backdoor", "cred_hash": sha256Hex("svcb_backdoor"), "scopes": []string{"bridge", "host-ops"},
		"paired_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}
}

// Issue 34 §4: snapshot files are authenticated and validated. A file
// edited to plant a client (checksum recomputed, any key but the cluster's)
// is refused with 422 snapshot_tampered; the same edit as an
// unauthenticated format-1 file restores without the planted credential
// (reported, with a warning); an unknown mode, a bad time or an oversized
// list is 422 invalid_snapshot; the state is unchanged by every refusal.
func TestSnapshotEditsAreRefused(t *testing.T) {
	d := startBrowserDaemon(t, "SVC_BROWSER_PAIRING=codes")
	dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Code: issueCode(t, d, nil), ClientID: "owner"}).Close()
	snap := d.DoAuth("GET", "/v1/snapshot", nil)
	if snap.Status != 200 {
		t.Fatalf("snapshot: %d", snap.Status)
	}
	if h, _, err := snapfile.Read(bytes.NewReader(snap.Body), 1<<30); err != nil || h.FormatVersion != 2 || h.Auth != snapfile.AuthHMAC {
		t.Fatalf("saved file: %+v %v", h, err)
	}
	before := sysStateOf(t, d)
	unchanged := func(what string) {
		t.Helper()
		if now := sysStateOf(t, d); now.Version != before.Version || now.Mode != before.Mode {
			t.Fatalf("%s changed the state: %+v → %+v", what, before, now)
		}
		if c, _ := dialRefused(t, d, fakeplugin.Options{Credential: "svcb_backdoor", ClientID: "backdoor"}); c != bridgeproto.ErrCredentialInvalid {
			t.Fatalf("%s: the planted credential: %s", what, c)
		}
	}

	status, out := restoreSnap(t, d, editSnapshot(t, snap.Body, []byte("a guessed key"), plant), false)
	if status != 422 || out.Error.Code != "snapshot_tampered" {
		t.Fatalf("edited authenticated file: %d %+v", status, out.Error)
	}
	unchanged("the edited file")

	for name, edit := range map[string]func(map[string]any){
		"unknown mode": func(s map[string]any) { s["system"].(map[string]any)["mode"] = "exploded" },
		"bad time": func(s map[string]any) {
			plant(s)
			s["pairing"].(map[string]any)["clients"].(map[string]any)["backdoor"].(map[string]any)["paired_at"] = "0001-01-01T00:00:00Z"
		},
		"oversized list": func(s map[string]any) {
			codes := map[string]any{}
			for i := 0; i < 65; i++ {
				h := sha256Hex(fmt.Sprint("code", i))
				codes[h] = map[string]any{"hash": h, "scopes": []string{"bridge"}, "issued_at": "2026-01-01T00:00:00Z", "expires_at": "2026-01-01T00:10:00Z"}
			}
			s["pairing"].(map[string]any)["codes"] = codes
		},
	} {
		status, out := restoreSnap(t, d, editSnapshot(t, snap.Body, nil, edit), true)
		if status != 422 || out.Error.Code != "invalid_snapshot" {
			t.Fatalf("%s: %d %+v", name, status, out.Error)
		}
		t.Logf("%s: %s", name, out.Error.Message)
		unchanged(name)
	}

	// The planting edit as a format-1 file: restores (old files still do),
	// says it is not authenticated and leaves the planted credential out.
	status, out = restoreSnap(t, d, editSnapshot(t, snap.Body, nil, plant), false)
	if status != 200 || out.Data.Authenticated || strings.Join(out.Data.Credentials.UnauthenticatedDropped, ",") != "backdoor" || len(out.Data.Credentials.Warnings) == 0 {
		t.Fatalf("unauthenticated planted file: %d %+v", status, out)
	}
	unchanged("the unauthenticated file")
	dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Credential: "", Code: issueCode(t, d, nil), ClientID: "after"}).Close()
	if !strings.Contains(d.Logs(), "not authenticated") {
		t.Fatal("no warning in the log about the unauthenticated file")
	}
}

// Issue 34 §5: a revocation made after a save survives a restore of that
// save; with force the restore brings it back, and says so.
func TestRevocationSurvivesRestore(t *testing.T) {
	d := startBrowserDaemon(t, "SVC_BROWSER_PAIRING=codes")
	p := dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Code: issueCode(t, d, nil), ClientID: "rv-1"})
	cred := p.HelloOK().Credential
	p.Close()
	snap := d.DoAuth("GET", "/v1/snapshot", nil)
	time.Sleep(10 * time.Millisecond) // the revocation is later than the snapshot's created_at (ms)
	if r := d.DoAuth("POST", "/v1/browser/clients/rv-1/revoke", nil); r.Status != 200 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	status, out := restoreSnap(t, d, snap.Body, false)
	if status != 200 || !out.Data.Authenticated || strings.Join(out.Data.Credentials.RevocationsKept, ",") != "rv-1" || len(out.Data.Credentials.ClientsAdded) != 0 {
		t.Fatalf("restore: %d %+v", status, out)
	}
	if c, _ := dialRefused(t, d, fakeplugin.Options{Credential: cred, ClientID: "rv-1"}); c != bridgeproto.ErrCredentialInvalid {
		t.Fatalf("the revoked credential after the restore: %s", c)
	}
	status, out = restoreSnap(t, d, snap.Body, true)
	if status != 200 || strings.Join(out.Data.Credentials.RevocationsUndone, ",") != "rv-1" || strings.Join(out.Data.Credentials.ClientsAdded, ",") != "rv-1" {
		t.Fatalf("forced restore: %d %+v", status, out)
	}
	dialPlugin(t, fakeplugin.Options{URL: wsURL(d), Credential: cred, ClientID: "rv-1"}).Close()
}

// Old snapshots (format 1, written by svcd before issue 34: testdata) still
// restore, with a warning that they are not authenticated.
func TestLegacySnapshotRestoresWithAWarning(t *testing.T) {
	file, err := os.ReadFile(legacySnapshot)
	if err != nil {
		t.Fatal(err)
	}
	d := startBrowserDaemon(t, "SVC_BROWSER_PAIRING=codes")
	status, out := restoreSnap(t, d, file, true)
	if status != 200 || out.Data.Authenticated || len(out.Data.Credentials.Warnings) == 0 || !strings.Contains(strings.Join(out.Data.Credentials.Warnings, " "), "not authenticated") {
		t.Fatalf("legacy restore: %d %+v", status, out)
	}
}
