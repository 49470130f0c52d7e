package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/shared/clustertls"
)

// svcd tls ca create / svcd tls cert create write files a node starts with
// (keys 0600), refuse to overwrite, refuse a bad SAN; and a node started on
// files that do not go together refuses to start, naming the setting.
func TestTLSCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if out, err := runSvcd(t, nil, "tls", "ca", "create", "-dir", dir); err != nil {
		t.Fatalf("ca create: %v\n%s", err, out)
	}
	ca, caKey := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	if out, err := runSvcd(t, nil, "tls", "ca", "create", "-dir", dir); err == nil || !strings.Contains(out, "not overwritten") {
		t.Fatalf("a second CA over the first: %v\n%s", err, out)
	}
	cert := func(name, san string) (string, error) {
		return runSvcd(t, nil, "tls", "cert", "create", "-dir", dir, "-ca", ca, "-ca-key", caKey, "-name", name, "-san", san)
	}
	if out, err := cert("n1", "127.0.0.1,n1.example"); err != nil {
		t.Fatalf("cert create: %v\n%s", err, out)
	}
	if out, err := cert("n2", "bad name"); err == nil || !strings.Contains(out, `SAN "bad name"`) {
		t.Fatalf("a bad SAN: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "n2-key.pem")); err == nil {
		t.Fatal("a refused cert create left a key behind")
	}
	for _, k := range []string{caKey, filepath.Join(dir, "n1-key.pem")} {
		if st, err := os.Stat(k); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", k, st.Mode(), err)
		}
	}
	files := clustertls.Files{CA: ca, Cert: filepath.Join(dir, "n1.pem"), Key: filepath.Join(dir, "n1-key.pem")}
	if _, err := clustertls.Load(files); err != nil {
		t.Fatalf("the created files do not load: %v", err)
	}
	// The CA's key where the node key belongs: refused at start, by name.
	out, err := runSvcd(t, []string{"SVC_TLS_CA_FILE=" + ca, "SVC_TLS_CERT_FILE=" + files.Cert, "SVC_TLS_KEY_FILE=" + caKey},
		"serve", "-listen", harness.FreePort(t), "-raft-addr", harness.FreePort(t), "-data-dir", t.TempDir())
	if err == nil || !strings.Contains(out, "tls_key_file "+caKey+" does not go with tls_cert_file") || strings.Contains(out, "PRIVATE KEY") {
		t.Fatalf("a node with a mismatched key: %v\n%s", err, out)
	}
}
