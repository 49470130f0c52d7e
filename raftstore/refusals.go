package raftstore

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/shared/clustertls"
)

// refusedError is a connection the stream layer turned away; reason is a
// metric label (docs/metrics.md, svcd_cluster_connections_refused_total).
type refusedError struct {
	reason string
	err    error
}

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// RefusalReasons are the labels of refused cluster connections, in order.
var RefusalReasons = []string{
	"no_certificate", "untrusted_certificate", "expired_certificate", "wrong_name",
	"not_tls", "tls_handshake", "refused_by_peer", "cluster_key", "protocol", "timeout", "other",
}

// reasonOf classifies a failed handshake.
func reasonOf(err error) string {
	var pe *clustertls.PeerError
	var re *refusedError
	var rh tls.RecordHeaderError
	var ne net.Error
	switch {
	case errors.As(err, &pe):
		return pe.Reason
	case errors.As(err, &re):
		return re.reason
	case remoteAlert(err):
		// The peer ended the TLS handshake: it does not trust this node's
		// certificate (a node of another CA checks ours first, TLS 1.3).
		return "refused_by_peer"
	case errors.As(err, &rh):
		// A plain-TCP node (cluster_tls = "off", or an older svcd) talking
		// to a TLS node: its first bytes are the challenge's nonce.
		return "not_tls"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, errTLSHandshake):
		return "tls_handshake"
	}
	return "other"
}

// remoteAlert reports a TLS alert the peer sent (crypto/tls reports it as
// a net.OpError "remote error").
func remoteAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

var errTLSHandshake = errors.New("tls handshake failed")

// refusalLogInterval is how often one source's refusals are logged: a node
// retrying with a wrong certificate every few milliseconds makes one line a
// minute (with how many were not logged), not a flood.
const refusalLogInterval = time.Minute

// refusals counts refused connections by reason and logs them at most once
// per source per interval.
type refusals struct {
	log    hclog.Logger
	now    func() time.Time
	mu     sync.Mutex
	counts map[string]uint64
	last   map[string]time.Time // source IP → last logged
	quiet  map[string]int       // source IP → refusals since, not logged
}

func newRefusals(log hclog.Logger) *refusals {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &refusals{log: log, now: time.Now, counts: map[string]uint64{}, last: map[string]time.Time{}, quiet: map[string]int{}}
}

// count records a refusal this node's dialing side saw (the peer was not
// a node of this cluster); the dial error reaches raft's own log.
func (r *refusals) count(reason string) {
	r.mu.Lock()
	r.counts[reason]++
	r.mu.Unlock()
}

// record counts and (rate-limited) logs an inbound refusal. The error says
// what was wrong with the peer; it never holds key material.
func (r *refusals) record(remote net.Addr, err error) {
	reason := reasonOf(err)
	src := remote.String()
	if h, _, e := net.SplitHostPort(src); e == nil {
		src = h
	}
	now := r.now()
	r.mu.Lock()
	r.counts[reason]++
	for ip, t := range r.last { // forget sources quiet for a whole interval
		if now.Sub(t) >= refusalLogInterval && r.quiet[ip] == 0 {
			delete(r.last, ip)
		}
	}
	t, seen := r.last[src]
	if seen && now.Sub(t) < refusalLogInterval {
		r.quiet[src]++
		r.mu.Unlock()
		return
	}
	suppressed := r.quiet[src]
	r.last[src] = now
	delete(r.quiet, src)
	r.mu.Unlock()
	r.log.Warn("cluster connection refused before any raft byte", "remote", remote.String(), "reason", reason,
		"error", err.Error(), "not_logged_since_last", suppressed, "log_interval", refusalLogInterval.String())
}

// snapshot copies the counts.
func (r *refusals) snapshot() map[string]uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]uint64, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}
