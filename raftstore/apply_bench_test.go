package raftstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkApply: one committed, applied write through the node against the
// floor it stands on, one fsync'd bbolt transaction storing the same bytes.
func BenchmarkApply(b *testing.B) {
	b.Run("baseline_bbolt_tx", func(b *testing.B) {
		db, err := bolt.Open(filepath.Join(b.TempDir(), "bare.db"), 0o600, &bolt.Options{Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		val := []byte(`{"mode":"paused","requested_by":"bench","reason":"bench"}`)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := db.Update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists([]byte("state"))
				if err != nil {
					return err
				}
				return bk.Put([]byte("system"), val)
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("node_apply", func(b *testing.B) {
		n := openTestNode(b, b.TempDir())
		defer n.Shutdown()
		ctx := context.Background()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := n.Apply(ctx, CmdSetSystemMode, SetSystemMode{Mode: ModePaused, RequestedBy: "bench", Reason: "bench"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
