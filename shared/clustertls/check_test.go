package clustertls

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pki is a CA and one node certificate in a temp dir.
func pki(t *testing.T, name string) (*CA, Files) {
	t.Helper()
	dir := t.TempDir()
	cp, kp, err := CreateCA(dir, name, 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	sans, _ := ParseSANs("127.0.0.1,n1.example")
	c, k, err := ca.CreateCert(dir, "n1", sans, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ca, Files{CA: cp, Cert: c, Key: k}
}

func TestCreatedFilesLoadAndKeysAre0600(t *testing.T) {
	_, f := pki(t, "cluster A")
	h, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f.Key, filepath.Join(filepath.Dir(f.CA), "ca-key.pem")} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v", p, st.Mode(), err)
		}
	}
	if d := h.Describe(); !strings.Contains(d, `"n1"`) || !strings.Contains(d, "127.0.0.1") || strings.Contains(d, "PRIVATE") {
		t.Fatalf("describe %q", d)
	}
}

func TestLoadRefusesWhatANodeCannotRunWith(t *testing.T) {
	caA, a := pki(t, "cluster A")
	_, b := pki(t, "cluster B")
	sans, _ := ParseSANs("127.0.0.1")
	oc, ok, err := caA.CreateCert(t.TempDir(), "old", sans, time.Hour, time.Now().Add(-3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    Files
		want string
	}{
		{"missing ca", Files{CA: a.CA + ".nope", Cert: a.Cert, Key: a.Key}, "tls_ca_file"},
		{"unset key", Files{CA: a.CA, Cert: a.Cert}, "tls_key_file is not set"},
		{"key of another cert", Files{CA: a.CA, Cert: a.Cert, Key: b.Key}, "does not go with tls_cert_file"},
		{"not signed by the CA", Files{CA: a.CA, Cert: b.Cert, Key: b.Key}, "is not signed by the CA"},
		{"expired", Files{CA: a.CA, Cert: oc, Key: ok}, "expired at"},
		{"key as CA", Files{CA: a.Key, Cert: a.Cert, Key: a.Key}, "PEM block where certificates were expected"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.f)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "BEGIN") {
				t.Fatalf("the error echoes PEM: %v", err)
			}
		})
	}
}

func TestReloadKeepsTheCertificateWhenTheNewFilesAreBad(t *testing.T) {
	ca, f := pki(t, "cluster A")
	h, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	first := h.current().leaf.SerialNumber
	// A broken key in place: refused, the old certificate stays.
	if err := os.WriteFile(f.Key, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Reload(); err == nil {
		t.Fatal("reload took a broken key")
	}
	if h.current().leaf.SerialNumber.Cmp(first) != 0 {
		t.Fatal("a refused reload replaced the certificate")
	}
	// A renewed certificate: taken.
	sans, _ := ParseSANs("127.0.0.1")
	c2, k2, err := ca.CreateCert(t.TempDir(), "n1", sans, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{c2: f.Cert, k2: f.Key} {
		b, _ := os.ReadFile(src)
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	if h.current().leaf.SerialNumber.Cmp(first) == 0 {
		t.Fatal("reload kept the old certificate")
	}
}

func TestCreateNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := CreateCA(dir, "a", time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := CreateCA(dir, "b", time.Hour, time.Now()); err == nil || !strings.Contains(err.Error(), "not overwritten") {
		t.Fatalf("second CA in the same dir: %v", err)
	}
}
