package config

import (
	"strings"
	"testing"
)

// The cluster TLS rule (docs/ha.md, TLS): plain raft off loopback only when
// the operator says cluster_tls = "off"; tls_* files all or none.
func TestClusterTLSRule(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want string // "" = valid
	}{
		{"single node", nil, ""},
		{"loopback raft, plain", map[string]string{"SVC_RAFT_ADDR": "127.0.0.2:7001"}, ""},
		{"lan raft, nothing said", map[string]string{"SVC_RAFT_ADDR": "10.0.0.1:7001"}, `cluster_tls = "off"`},
		{"loopback bind, lan advertise", map[string]string{"SVC_RAFT_ADDR": "127.0.0.1:7001", "SVC_RAFT_ADVERTISE": "10.0.0.1:7001"}, "leaves this host"},
		{"lan raft, off", map[string]string{"SVC_RAFT_ADDR": "10.0.0.1:7001", "SVC_CLUSTER_TLS": "off"}, ""},
		{"lan raft, files", map[string]string{"SVC_RAFT_ADDR": "10.0.0.1:7001", "SVC_TLS_CA_FILE": "ca.pem", "SVC_TLS_CERT_FILE": "n1.pem", "SVC_TLS_KEY_FILE": "n1-key.pem"}, ""},
		{"on without files", map[string]string{"SVC_RAFT_ADDR": "10.0.0.1:7001", "SVC_CLUSTER_TLS": "on"}, "tls_ca_file is not set"},
		{"a key missing", map[string]string{"SVC_RAFT_ADDR": "10.0.0.1:7001", "SVC_TLS_CA_FILE": "ca.pem", "SVC_TLS_CERT_FILE": "n1.pem"}, "tls_key_file is not set"},
		{"off with files", map[string]string{"SVC_RAFT_ADDR": "10.0.0.1:7001", "SVC_CLUSTER_TLS": "off", "SVC_TLS_CA_FILE": "ca.pem"}, "which one did you mean"},
		{"unknown mode", map[string]string{"SVC_CLUSTER_TLS": "maybe"}, `cluster_tls "maybe"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load("t", nil, envOf(c.env))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// OpenClusterTLS names the setting of a file that is not there.
func TestOpenClusterTLSNamesTheMissingFile(t *testing.T) {
	c := Defaults()
	c.RaftAddr, c.TLSCAFile, c.TLSCertFile, c.TLSKeyFile = "10.0.0.1:7001", "/nonexistent/ca.pem", "/nonexistent/n1.pem", "/nonexistent/k.pem"
	_, err := c.OpenClusterTLS()
	if err == nil || !strings.Contains(err.Error(), "tls_ca_file /nonexistent/ca.pem") {
		t.Fatalf("error %v", err)
	}
}
