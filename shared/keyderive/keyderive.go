// Package keyderive derives purpose-bound keys from the cluster key (the
// shared token unless cluster_key is set), which every node of a cluster
// holds and which is never in the raft log, a raft snapshot or a snapshot
// file. One derived key per purpose, so a MAC made for one use (a snapshot
// file) is never valid for another (a credential hash).
package keyderive

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// Purposes of derived keys.
const (
	PairingHash  = "pairing-hash/v1"  // keyed hashes of pairing codes and bridge credentials
	SnapshotAuth = "snapshot-auth/v1" // the MAC of a snapshot file
)

// Derive returns HMAC-SHA256(master, "svcd/"+purpose): 32 bytes.
func Derive(master []byte, purpose string) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte("svcd/" + purpose))
	return m.Sum(nil)
}

// HexMAC returns the hex HMAC-SHA256 of msg under key.
func HexMAC(key []byte, msg string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}
