package raftstore

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"
)

// SeenMessageRetention is how long the store remembers that a conversation's
// message id was seen. A reply reported again within it is a repeat and its
// instruction blocks never run again, however many newer replies came in
// between (docs/instructions.md "repeated"). It is counted from the time the
// id was first seen, on the leader's clock (the command's At).
const SeenMessageRetention = 7 * 24 * time.Hour

// MaxSeenMessages bounds the remembered ids of all conversations together.
// Each costs 12 bytes in a snapshot (16 in base64) and about 40 bytes of
// memory, so the cap is about 4 MiB of snapshot and 10 MiB of memory. At the
// cap (after the ids older than SeenMessageRetention are dropped) a new
// message id is refused, not taken: forgetting an id that is still within
// the retention could let its reply run twice, refusing only delays a new
// one until older ids expire. 262144 ids in 7 days is one new reply every
// 2.3 s, day and night.
const MaxSeenMessages = 1 << 18

// seenEntry is one remembered id: the first 8 bytes of
// sha256(local_conversation_id NUL message_id) and when it was first seen
// (unix seconds). Two different ids share a hash with odds of about n/2^64:
// the newer one would be taken as a repeat and not run, never run twice.
type seenEntry struct {
	hash uint64
	at   uint32
}

const seenEntrySize = 12

// SeenMessagesState is the durable dedup set of conversation message ids.
// The queue is in the order the ids were first seen (the FSM's apply order,
// the same on every replica), so expiry pops from its head; the index is
// derived from it.
type SeenMessagesState struct {
	queue []seenEntry
	head  int
	index map[uint64]struct{}
	// present is false for a state decoded from a snapshot written before
	// this area existed: normalize then seeds it from the conversations'
	// own last 64 ids (seen_message_ids) once.
	present bool
}

// SeenMessagesFull is the reason a new message id was refused at the cap.
type SeenMessagesFull struct {
	Count     int
	Retention time.Duration
}

func (e *SeenMessagesFull) Error() string {
	return fmt.Sprintf("the store already remembers %d message ids seen in the last %s (the cap); a new reply is refused rather than risk running an old one twice: it can be taken once older ids expire", e.Count, e.Retention)
}

// seenHash is the key of one conversation's message id.
func seenHash(localID, messageID string) uint64 {
	h := sha256.New()
	h.Write([]byte(localID))
	h.Write([]byte{0})
	h.Write([]byte(messageID))
	var sum [sha256.Size]byte
	return binary.BigEndian.Uint64(h.Sum(sum[:0]))
}

// seenSeconds is at as unix seconds, clamped to what 32 bits hold.
func seenSeconds(at time.Time) uint32 {
	s := at.Unix()
	switch {
	case s < 0:
		return 0
	case s > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(s)
}

// Len is how many ids are remembered.
func (m *SeenMessagesState) Len() int { return len(m.queue) - m.head }

// Has reports whether the conversation's message id is remembered.
func (m *SeenMessagesState) Has(localID, messageID string) bool {
	_, ok := m.index[seenHash(localID, messageID)]
	return ok
}

// expire drops the ids first seen more than SeenMessageRetention before at.
func (m *SeenMessagesState) expire(at time.Time) {
	cut := at.Add(-SeenMessageRetention).Unix()
	for m.head < len(m.queue) && int64(m.queue[m.head].at) < cut {
		delete(m.index, m.queue[m.head].hash)
		m.queue[m.head] = seenEntry{}
		m.head++
	}
	// Reclaim the popped head once it is the larger part of the slice.
	if m.head > 0 && m.head >= len(m.queue)/2 {
		m.queue = append(m.queue[:0:0], m.queue[m.head:]...)
		m.head = 0
	}
}

// add remembers an id not yet remembered, after expiring old ones; at the
// cap it refuses (nothing is forgotten to make room).
func (m *SeenMessagesState) add(localID, messageID string, at time.Time) error {
	m.expire(at)
	if m.Len() >= MaxSeenMessages {
		return &SeenMessagesFull{Count: m.Len(), Retention: SeenMessageRetention}
	}
	h := seenHash(localID, messageID)
	if _, ok := m.index[h]; ok {
		return nil
	}
	m.queue = append(m.queue, seenEntry{hash: h, at: seenSeconds(at)})
	m.index[h] = struct{}{}
	return nil
}

// seenMessagesJSON is the snapshot form: the queue packed as 12-byte
// records (hash big-endian, then unix seconds), base64.
type seenMessagesJSON struct {
	RetentionSeconds int64  `json:"retention_seconds"`
	Count            int    `json:"count"`
	Entries          string `json:"entries"`
}

// MarshalJSON implements json.Marshaler.
func (m SeenMessagesState) MarshalJSON() ([]byte, error) {
	live := m.queue[m.head:]
	b := make([]byte, 0, len(live)*seenEntrySize)
	for _, e := range live {
		b = binary.BigEndian.AppendUint64(b, e.hash)
		b = binary.BigEndian.AppendUint32(b, e.at)
	}
	return json.Marshal(seenMessagesJSON{
		RetentionSeconds: int64(SeenMessageRetention / time.Second),
		Count:            len(live),
		Entries:          base64.StdEncoding.EncodeToString(b),
	})
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *SeenMessagesState) UnmarshalJSON(data []byte) error {
	var j seenMessagesJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	b, err := base64.StdEncoding.DecodeString(j.Entries)
	if err != nil {
		return fmt.Errorf("seen_messages entries: %w", err)
	}
	if len(b)%seenEntrySize != 0 || len(b)/seenEntrySize != j.Count {
		return fmt.Errorf("seen_messages entries: %d bytes for count %d (want %d-byte records)", len(b), j.Count, seenEntrySize)
	}
	q := make([]seenEntry, 0, j.Count)
	for i := 0; i < len(b); i += seenEntrySize {
		q = append(q, seenEntry{hash: binary.BigEndian.Uint64(b[i:]), at: binary.BigEndian.Uint32(b[i+8:])})
	}
	*m = SeenMessagesState{queue: q, present: true}
	return nil
}

// normalize rebuilds the index; for a snapshot from before this area (or a
// fresh state) it seeds the set once from each conversation's last ids,
// dated by the conversation's last AI message, in local id order so every
// replica builds the same queue.
func (m *SeenMessagesState) normalize(convs map[string]*Conversation) {
	m.index = make(map[uint64]struct{}, m.Len())
	live := m.queue[m.head:]
	for _, e := range live {
		m.index[e.hash] = struct{}{}
	}
	if m.present {
		return
	}
	m.present = true
	ids := make([]string, 0, len(convs))
	for id, cv := range convs {
		if len(cv.Seen) > 0 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		cv := convs[id]
		at := cv.LastAIMessageAt
		if at.IsZero() {
			at = cv.UpdatedAt
		}
		for _, mid := range cv.Seen {
			h := seenHash(id, mid)
			if _, ok := m.index[h]; ok || m.Len() >= MaxSeenMessages {
				continue
			}
			m.queue = append(m.queue, seenEntry{hash: h, at: seenSeconds(at)})
			m.index[h] = struct{}{}
		}
	}
}
