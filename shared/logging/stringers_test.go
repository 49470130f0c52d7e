package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// node stands for *raft.Raft: unexported fields, a String method.
type node struct{ addr string }

func (n *node) String() string { return "Node at " + n.addr + " [Leader]" }

func TestStringersRenderInJSON(t *testing.T) {
	var buf bytes.Buffer
	log := Stringers(NewTo(&buf, "svcd", "debug", true)).Named("raft")
	log.Info("entering leader state", "leader", &node{"inmem:node1"}, "term", 2, "err", errors.New("boom"))
	log.With("self", &node{"x"}).Debug("with", "at", time.Unix(0, 0).UTC())
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("lines: %s", buf.Bytes())
	}
	var first, second map[string]any
	if err := json.Unmarshal(lines[0], &first); err != nil {
		t.Fatal(err)
	}
	if first["leader"] != "Node at inmem:node1 [Leader]" || first["term"] != float64(2) || first["err"] != "boom" || first["@module"] != "svcd.raft" {
		t.Fatalf("first line: %s", lines[0])
	}
	if err := json.Unmarshal(lines[1], &second); err != nil {
		t.Fatal(err)
	}
	// time.Time marshals itself: left as hclog encodes it.
	if second["self"] != "Node at x [Leader]" || second["at"] != "1970-01-01T00:00:00Z" {
		t.Fatalf("second line: %s", lines[1])
	}
}
