package raftstore

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A source refused again and again within the interval is logged once, and
// the next line, an interval later, says how many were not logged; every
// refusal is counted. Another source gets its own line at once.
func TestRefusalsLogOncePerSourcePerInterval(t *testing.T) {
	var buf bytes.Buffer
	r := newRefusals(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Warn}))
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	a := &net.TCPAddr{IP: net.ParseIP("10.0.0.9"), Port: 40000}
	bad := &refusedError{reason: "cluster_key", err: errors.New("wrong cluster key")}
	for i := 0; i < 5; i++ {
		a.Port++
		r.record(a, bad)
		now = now.Add(time.Second)
	}
	r.record(&net.TCPAddr{IP: net.ParseIP("10.0.0.8"), Port: 1}, bad)
	if n := strings.Count(buf.String(), "remote=10.0.0.9:"); n != 1 {
		t.Fatalf("%d lines for 10.0.0.9 within the interval, want 1:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "remote=10.0.0.8:1") {
		t.Fatalf("the second source was not logged:\n%s", buf.String())
	}
	now = now.Add(refusalLogInterval)
	r.record(a, bad)
	if !strings.Contains(buf.String(), "not_logged_since_last=4") {
		t.Fatalf("the line after the interval does not count the 4 unlogged refusals:\n%s", buf.String())
	}
	if got := r.snapshot()["cluster_key"]; got != 7 {
		t.Fatalf("counted %d refusals, want 7", got)
	}
}
