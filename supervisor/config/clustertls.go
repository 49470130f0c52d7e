package config

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/svcd/svcd/shared/clustertls"
)

// Cluster TLS (docs/ha.md, TLS). The rule:
//   - cluster_tls = "on": raft and forwarded calls run over mutual TLS;
//     tls_ca_file, tls_cert_file and tls_key_file are required.
//   - cluster_tls = "off": plain TCP with the cluster-key challenge, said
//     explicitly by the operator (logged as a warning off loopback).
//   - unset: "on" when any tls_* file is set; otherwise plain TCP is
//     allowed only where no traffic leaves the host — no raft_addr (a
//     single node), or raft_addr and raft_advertise on loopback. A node
//     whose raft traffic would cross a network without TLS refuses to start.

// ClusterTLSOn reports whether this node runs cluster TLS.
func (c Config) ClusterTLSOn() bool {
	switch strings.ToLower(c.ClusterTLS) {
	case "on":
		return true
	case "off":
		return false
	}
	return c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != ""
}

// ClusterTLSFiles are the node's tls_* paths.
func (c Config) ClusterTLSFiles() clustertls.Files {
	return clustertls.Files{CA: c.TLSCAFile, Cert: c.TLSCertFile, Key: c.TLSKeyFile}
}

// OpenClusterTLS loads and checks the certificate files when cluster TLS is
// on (nil when off): missing file, key not matching the certificate,
// certificate not signed by the CA, expired — each a start-up error naming
// the file and the setting.
func (c Config) OpenClusterTLS() (*clustertls.Holder, error) {
	if !c.ClusterTLSOn() || c.RaftAddr == "" {
		return nil, nil
	}
	h, err := clustertls.Load(c.ClusterTLSFiles())
	if err != nil {
		return nil, fmt.Errorf("cluster TLS: %w", err)
	}
	return h, nil
}

// PlainOffLoopback reports a node told to use plain TCP whose raft traffic
// leaves the host: allowed (cluster_tls = "off"), worth a warning.
func (c Config) PlainOffLoopback() bool {
	return c.RaftAddr != "" && !c.ClusterTLSOn() && !c.raftOnLoopback()
}

func (c Config) raftOnLoopback() bool {
	for _, a := range []string{c.RaftAddr, c.RaftAdvertise} {
		if a == "" {
			continue
		}
		h, _, err := net.SplitHostPort(a)
		if err != nil {
			return false
		}
		if h == "localhost" {
			continue
		}
		ip := net.ParseIP(h)
		if ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

func (c Config) validateClusterTLS() []error {
	var errs []error
	switch strings.ToLower(c.ClusterTLS) {
	case "", "on", "off":
	default:
		return []error{fmt.Errorf("cluster_tls %q: want \"on\", \"off\" or unset (on when tls_* files are set)", c.ClusterTLS)}
	}
	mode := strings.ToLower(c.ClusterTLS)
	anyFile := c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != ""
	if mode == "off" && anyFile {
		errs = append(errs, errors.New(`cluster_tls = "off" with tls_* files set: remove the files or the "off" (which one did you mean?)`))
	}
	if c.ClusterTLSOn() {
		for _, f := range []struct{ name, v string }{{"tls_ca_file", c.TLSCAFile}, {"tls_cert_file", c.TLSCertFile}, {"tls_key_file", c.TLSKeyFile}} {
			if f.v == "" {
				errs = append(errs, fmt.Errorf("%s is not set: cluster TLS needs tls_ca_file, tls_cert_file and tls_key_file (docs/ha.md, TLS)", f.name))
			}
		}
	}
	if mode == "" && !anyFile && c.RaftAddr != "" && !c.raftOnLoopback() {
		errs = append(errs, fmt.Errorf(`raft_addr %q leaves this host, and cluster TLS is not configured: set tls_ca_file, tls_cert_file and tls_key_file (svcd tls ca create / svcd tls cert create, docs/ha.md), or cluster_tls = "off" to run raft and forwarded calls unencrypted on purpose`, c.RaftAddr))
	}
	return errs
}
