package keyderive

import (
	"bytes"
	"testing"
)

// Keys differ per purpose and per master, and are stable.
func TestDeriveSeparatesPurposes(t *testing.T) {
	a, b := Derive([]byte("k"), PairingHash), Derive([]byte("k"), SnapshotAuth)
	if bytes.Equal(a, b) || len(a) != 32 {
		t.Fatal("purposes share a key")
	}
	if !bytes.Equal(a, Derive([]byte("k"), PairingHash)) || bytes.Equal(a, Derive([]byte("k2"), PairingHash)) {
		t.Fatal("derivation not a function of master and purpose")
	}
	if HexMAC(a, "x") == HexMAC(b, "x") || len(HexMAC(a, "x")) != 64 {
		t.Fatal("HexMAC")
	}
}
