package raftstore

import (
	"sort"
	"time"
)

// recentIndex orders the conversations as the list route and the browser
// read model show them: most recently updated first, ties by
// local_conversation_id. A page then costs its own length (plus a binary
// search for the cursor) instead of a walk over every conversation.
//
// Entries are kept oldest first, so an update (whose time is almost always
// the newest) is an append. An update does not look for the record's
// previous entry: that entry goes stale (its stamp is no longer the
// record's), readers skip it and prune drops the stale ones once they are
// half the slice. Derived from ByID (not in snapshots): normalize rebuilds it.
type recentIndex struct {
	entries []recentEntry
	stamp   map[string]uint64 // local id → stamp of its one live entry
	next    uint64
	dead    int
}

type recentEntry struct {
	at    time.Time
	id    string
	stamp uint64
}

// older says whether a sorts before b in entries (so after b in the list).
func (a recentEntry) older(at time.Time, id string) bool {
	if !a.at.Equal(at) {
		return a.at.Before(at)
	}
	return a.id > id
}

func (x *recentIndex) reset(n int) {
	x.entries, x.stamp, x.next, x.dead = make([]recentEntry, 0, n), make(map[string]uint64, n), 0, 0
}

// put files id at time at, replacing its previous entry.
func (x *recentIndex) put(id string, at time.Time) {
	if _, had := x.stamp[id]; had {
		x.dead++
	}
	x.next++
	x.stamp[id] = x.next
	e := recentEntry{at: at, id: id, stamp: x.next}
	i := len(x.entries)
	if i > 0 && !x.entries[i-1].older(at, id) {
		i = sort.Search(len(x.entries), func(k int) bool { return !x.entries[k].older(at, id) })
	}
	x.entries = append(x.entries, recentEntry{})
	copy(x.entries[i+1:], x.entries[i:])
	x.entries[i] = e
	x.prune()
}

// drop forgets id (its record left the area).
func (x *recentIndex) drop(id string) {
	if _, had := x.stamp[id]; had {
		delete(x.stamp, id)
		x.dead++
		x.prune()
	}
}

func (x *recentIndex) live(e recentEntry) bool { return x.stamp[e.id] == e.stamp }

func (x *recentIndex) prune() {
	if x.dead < 64 || x.dead*2 < len(x.entries) {
		return
	}
	kept := x.entries[:0]
	for _, e := range x.entries {
		if x.live(e) {
			kept = append(kept, e)
		}
	}
	clear(x.entries[len(kept):])
	x.entries, x.dead = kept, 0
}

// touch sets cv's updated_at and moves it in the recency order. Every
// change of UpdatedAt goes through here.
func (c *ConversationsState) touch(cv *Conversation, at time.Time) {
	if c.recent.stamp == nil {
		c.recent.reset(0)
	}
	if _, ok := c.recent.stamp[cv.LocalID]; ok && cv.UpdatedAt.Equal(at) {
		return
	}
	cv.UpdatedAt = at
	c.recent.put(cv.LocalID, at)
}

// forget drops an evicted conversation from the derived indexes.
func (c *ConversationsState) forget(id string) {
	delete(c.auto, id)
	c.recent.drop(id)
}

// Recent calls fn for each conversation in list order (most recently
// updated first, ties by local_conversation_id), starting after the one
// that was updated at afterAt with id afterID (afterID "": from the
// start), until fn returns false. Like all of State, only inside Node.Read.
func (c *ConversationsState) Recent(afterAt time.Time, afterID string, fn func(cv *Conversation) bool) {
	e := c.recent.entries
	i := len(e)
	if afterID != "" {
		// The first entry that sorts at or after the cursor's place comes
		// after it in the list: start below it.
		i = sort.Search(len(e), func(k int) bool { return !e[k].older(afterAt, afterID) })
	}
	for i--; i >= 0; i-- {
		if !c.recent.live(e[i]) {
			continue
		}
		cv := c.ByID[e[i].id]
		if cv == nil {
			continue
		}
		if !fn(cv) {
			return
		}
	}
}
