package harness

import (
	"testing"
	"time"

	"github.com/svcd/svcd/shared/clustertls"
)

// ClusterPKI is a cluster CA in a temp dir that issues node certificates
// (what `svcd tls ca create` and `svcd tls cert create` write).
type ClusterPKI struct {
	Dir    string
	CAPath string
	CA     *clustertls.CA
}

// NewClusterPKI creates a CA named name.
func NewClusterPKI(t testing.TB, name string) *ClusterPKI {
	t.Helper()
	dir := t.TempDir()
	cp, kp, err := clustertls.CreateCA(dir, name, 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := clustertls.LoadCA(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	return &ClusterPKI{Dir: dir, CAPath: cp, CA: ca}
}

// Issue writes a certificate for node with the comma separated SANs.
func (p *ClusterPKI) Issue(t testing.TB, node, sans string) clustertls.Files {
	t.Helper()
	s, err := clustertls.ParseSANs(sans)
	if err != nil {
		t.Fatal(err)
	}
	cp, kp, err := p.CA.CreateCert(p.Dir, node, s, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return clustertls.Files{CA: p.CAPath, Cert: cp, Key: kp}
}

// Env is the environment that runs a member with node's certificate.
func (p *ClusterPKI) Env(t testing.TB, node, sans string) []string {
	t.Helper()
	f := p.Issue(t, node, sans)
	return []string{"SVC_CLUSTER_TLS=on", "SVC_TLS_CA_FILE=" + f.CA, "SVC_TLS_CERT_FILE=" + f.Cert, "SVC_TLS_KEY_FILE=" + f.Key}
}
