package raftstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"
)

func hashOf(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// A code is redeemed once, its client and scopes survive a restart, a
// reused code is unknown, an expired one says so, and revoke removes it.
func TestPairingCodesRedeemOnceAndSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	n := openTestNode(t, dir)
	ctx := context.Background()
	exp := time.Now().Add(10 * time.Minute)
	if _, err := n.Apply(ctx, CmdPairCode, PairCodeIssue{Hash: hashOf("CODE1"), Scopes: []string{ScopeHostOps}, ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Apply(ctx, CmdPairCode, PairCodeIssue{Hash: "CODE-IN-CLEAR", ExpiresAt: exp}); err == nil {
		t.Fatal("a code in clear was stored")
	}
	if _, err := n.Apply(ctx, CmdPairCode, PairCodeIssue{Hash: hashOf("X"), Scopes: []string{"root"}, ExpiresAt: exp}); err == nil {
		t.Fatal("unknown scope accepted")
	}
	v, err := n.Apply(ctx, CmdPairRedeem, PairRedeem{CodeHash: hashOf("CODE1"), ClientID: "c1", CredHash: hashOf("cred")})
	if err != nil {
		t.Fatal(err)
	}
	if cl := v.(PairedClient); !cl.HasScope(ScopeHostOps) || !cl.HasScope(ScopeBridge) {
		t.Fatalf("scopes %v", cl.Scopes)
	}
	if _, err := n.Apply(ctx, CmdPairRedeem, PairRedeem{CodeHash: hashOf("CODE1"), ClientID: "c2", CredHash: hashOf("cred2")}); !errors.Is(err, ErrCodeUnknown) && (err == nil || err.Error() != ErrCodeUnknown.Error()) {
		t.Fatalf("reused code: %v", err)
	}
	if _, err := n.Apply(ctx, CmdPairScope, PairScope{ClientID: "c1", Scope: ScopeHostOps, Grant: false}); err != nil {
		t.Fatal(err)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	n.Shutdown()

	n = openTestNode(t, dir)
	defer n.Shutdown()
	if err := n.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	n.Read(func(s *State) {
		cl := s.Pairing.Clients["c1"]
		if cl == nil || cl.CredHash != hashOf("cred") || cl.HasScope(ScopeHostOps) || len(s.Pairing.Codes) != 0 {
			t.Fatalf("after restart: %+v codes %d", cl, len(s.Pairing.Codes))
		}
	})
	// An expired code: issued valid, redeemed after its expiry (the
	// command's own time decides, so every replica agrees).
	if _, err := n.Apply(ctx, CmdPairCode, PairCodeIssue{Hash: hashOf("CODE2"), ExpiresAt: time.Now().Add(50 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	if _, err := n.Apply(ctx, CmdPairRedeem, PairRedeem{CodeHash: hashOf("CODE2"), ClientID: "c3", CredHash: hashOf("c")}); err == nil || err.Error() != ErrCodeExpired.Error() {
		t.Fatalf("expired code: %v", err)
	}
	if _, err := n.Apply(ctx, CmdPairRevoke, PairRevoke{ClientID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Apply(ctx, CmdPairRevoke, PairRevoke{ClientID: "c1"}); err == nil {
		t.Fatal("second revoke succeeded")
	}
}
