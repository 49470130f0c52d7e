package raftstore

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A rekey replaces a legacy (unkeyed) credential hash only while it is the
// one stored; a keyed entry or a different hash is left alone.
func TestPairRekeyReplacesOnlyTheVerifiedLegacyHash(t *testing.T) {
	s := newState()
	old, keyed, other := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	s.Pairing.Clients["c1"] = &PairedClient{ClientID: "c1", CredHash: old, Scopes: []string{ScopeBridge}}
	at := time.Now()
	cmd := func(p PairRekey) Command {
		b, _ := json.Marshal(p)
		return Command{Type: CmdPairRekey, At: at, Payload: b}
	}
	if _, err := applyPairRekey(s, cmd(PairRekey{ClientID: "c1", OldHash: other, NewHash: keyed})); err != nil || s.Pairing.Clients["c1"].CredHash != old {
		t.Fatalf("a rekey of another hash: %v %+v", err, s.Pairing.Clients["c1"])
	}
	if _, err := applyPairRekey(s, cmd(PairRekey{ClientID: "c1", OldHash: old, NewHash: keyed})); err != nil || s.Pairing.Clients["c1"].CredHash != keyed || !s.Pairing.Clients["c1"].Keyed {
		t.Fatalf("rekey: %v %+v", err, s.Pairing.Clients["c1"])
	}
	if _, err := applyPairRekey(s, cmd(PairRekey{ClientID: "c1", OldHash: keyed, NewHash: other})); err != nil || s.Pairing.Clients["c1"].CredHash != keyed {
		t.Fatalf("a keyed entry was re-keyed: %v %+v", err, s.Pairing.Clients["c1"])
	}
	if _, err := applyPairRekey(s, cmd(PairRekey{ClientID: "c1", OldHash: "zz", NewHash: keyed})); err == nil {
		t.Fatal("a malformed hash was accepted")
	}
}
