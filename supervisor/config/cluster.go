package config

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/svcd/svcd/raftstore"
)

// Cluster settings (docs/ha.md). A node with raft_addr set talks raft over
// TCP, authenticated with cluster_key (default: the shared token).

// ClusterTimings turns the raft_* settings into raftstore timings; zero
// fields keep raftstore's tuned defaults.
func (c Config) ClusterTimings() raftstore.Timings {
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	return raftstore.Timings{
		HeartbeatTimeout:   ms(c.RaftHeartbeatMs),
		ElectionTimeout:    ms(c.RaftElectionMs),
		LeaderLeaseTimeout: ms(c.RaftLeaseMs),
		SnapshotInterval:   ms(c.RaftSnapshotIntervalMs),
		SnapshotThreshold:  uint64(c.RaftSnapshotThreshold),
		TrailingLogs:       uint64(c.RaftTrailingLogs),
	}
}

// APIAdvertise is the address other nodes reach this node's API at.
func (c Config) APIAdvertise() string {
	if c.APIAdvertiseAddr != "" {
		return c.APIAdvertiseAddr
	}
	return c.Listen
}

func (c Config) validateCluster() []error {
	var errs []error
	for name, v := range map[string]int64{
		"raft_heartbeat_timeout_ms": c.RaftHeartbeatMs, "raft_election_timeout_ms": c.RaftElectionMs,
		"raft_lease_timeout_ms": c.RaftLeaseMs, "raft_snapshot_interval_ms": c.RaftSnapshotIntervalMs,
		"raft_snapshot_threshold": c.RaftSnapshotThreshold, "raft_trailing_logs": c.RaftTrailingLogs,
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative (0 means the default), got %d", name, v))
		}
	}
	for name, addr := range map[string]string{"raft_advertise": c.RaftAdvertise, "api_advertise": c.APIAdvertiseAddr} {
		if addr == "" {
			continue
		}
		if h, _, err := net.SplitHostPort(addr); err != nil || h == "" || net.ParseIP(h) != nil && net.ParseIP(h).IsUnspecified() {
			errs = append(errs, fmt.Errorf("%s %q: want a reachable host:port", name, addr))
		}
	}
	for _, j := range c.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			errs = append(errs, fmt.Errorf("join %q: want the host:port of a cluster member's API (with cluster TLS: its raft address)", j))
		}
	}
	errs = append(errs, c.validateClusterTLS()...)
	if len(c.Join) > 0 && c.RaftAddr == "" {
		errs = append(errs, fmt.Errorf("join needs raft_addr: a node joins over raft's TCP transport"))
	}
	return errs
}

func clusterEnvVars() []envVar {
	i64 := func(dst func(*Config) *int64) func(*Config, string) error {
		return func(c *Config, v string) (err error) { *dst(c), err = strconv.ParseInt(v, 10, 64); return }
	}
	return []envVar{
		{"SVC_RAFT_ADVERTISE", func(c *Config, v string) error { c.RaftAdvertise = v; return nil }},
		{"SVC_API_ADVERTISE", func(c *Config, v string) error { c.APIAdvertiseAddr = v; return nil }},
		{"SVC_CLUSTER_KEY", func(c *Config, v string) error { c.ClusterKey = v; return nil }},
		{"SVC_JOIN", func(c *Config, v string) error { c.Join = splitList(v); return nil }},
		{"SVC_RAFT_HEARTBEAT_TIMEOUT_MS", i64(func(c *Config) *int64 { return &c.RaftHeartbeatMs })},
		{"SVC_RAFT_ELECTION_TIMEOUT_MS", i64(func(c *Config) *int64 { return &c.RaftElectionMs })},
		{"SVC_RAFT_LEASE_TIMEOUT_MS", i64(func(c *Config) *int64 { return &c.RaftLeaseMs })},
		{"SVC_RAFT_SNAPSHOT_INTERVAL_MS", i64(func(c *Config) *int64 { return &c.RaftSnapshotIntervalMs })},
		{"SVC_RAFT_SNAPSHOT_THRESHOLD", i64(func(c *Config) *int64 { return &c.RaftSnapshotThreshold })},
		{"SVC_RAFT_TRAILING_LOGS", i64(func(c *Config) *int64 { return &c.RaftTrailingLogs })},
		{"SVC_CLUSTER_TLS", func(c *Config, v string) error { c.ClusterTLS = v; return nil }},
		{"SVC_TLS_CA_FILE", func(c *Config, v string) error { c.TLSCAFile = v; return nil }},
		{"SVC_TLS_CERT_FILE", func(c *Config, v string) error { c.TLSCertFile = v; return nil }},
		{"SVC_TLS_KEY_FILE", func(c *Config, v string) error { c.TLSKeyFile = v; return nil }},
	}
}
