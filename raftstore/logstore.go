package raftstore

import (
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"
)

// openLogStore opens raft.db, the log and stable store, with every write
// fsync'd (an acknowledged write survives SIGKILL and power loss).
//
// The freelist is not written on each commit (NoFreelistSync): the raft log
// appends at one end and is truncated at the other after each snapshot, so
// its freelist is long and writing it made every commit several pages larger
// than the one entry it stores. bbolt rebuilds the freelist by scanning the
// file when it opens, so nothing durable depends on it. The hashmap freelist
// keeps allocation cheap as the file's free pages grow.
func openLogStore(path string) (*raftboltdb.BoltStore, error) {
	return raftboltdb.New(raftboltdb.Options{
		Path: path,
		BoltOptions: &bolt.Options{
			Timeout:        time.Second,
			NoFreelistSync: true,
			FreelistType:   bolt.FreelistMapType,
		},
	})
}
