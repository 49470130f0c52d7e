// Package jsoncache keeps the JSON of list entries between requests. A
// list route encodes the same few hundred records again and again while
// they rarely change, and encoding/json was most of such a page's cost
// (issue 24 S2). An entry's bytes are reused only while the value the
// route is about to write is the Same as the one they were encoded from,
// compared field by field on every use, so a change anywhere in the
// record — through whichever FSM command — is never served stale; there
// is no invalidation to forget.
package jsoncache

import (
	"sync"

	"github.com/svcd/svcd/shared/api"
)

// Entries maps a key (a record's id) to the last encoding of its value.
// It holds at most 2×limit entries: when the current generation is full
// it becomes the previous one and the oldest generation is dropped, so
// the entries of the pages read lately stay.
type Entries[V any] struct {
	same  func(a, b *V) bool
	clone func(v *V) V
	limit int

	mu        sync.Mutex
	cur, prev map[string]*entry[V]
}

// entry is never changed once made: readers use it outside the lock.
type entry[V any] struct {
	v   V // a clone: the FSM changes its records in place
	enc []byte
}

// New keeps up to 2×limit encodings of V. same must compare every field
// that encodes; clone must copy v so that it shares nothing with it.
func New[V any](limit int, same func(a, b *V) bool, clone func(v *V) V) *Entries[V] {
	return &Entries[V]{same: same, clone: clone, limit: max(1, limit), cur: map[string]*entry[V]{}}
}

// Append appends v's JSON as api.AppendJSON writes it to dst: the kept
// bytes when key's entry was encoded from a value the Same as v, else a
// new encoding, which is kept.
func (e *Entries[V]) Append(dst []byte, key string, v *V) ([]byte, error) {
	if en := e.get(key); en != nil && e.same(&en.v, v) {
		return append(dst, en.enc...), nil
	}
	enc, err := api.AppendJSON(nil, v)
	if err != nil {
		return dst, err
	}
	e.put(key, &entry[V]{v: e.clone(v), enc: enc})
	return append(dst, enc...), nil
}

// AppendList appends vs as a JSON array, as api.AppendJSON writes a
// non-nil slice, each element by Append under its key.
func (e *Entries[V]) AppendList(dst []byte, vs []V, key func(*V) string) ([]byte, error) {
	dst = append(dst, '[')
	for i := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = e.Append(dst, key(&vs[i]), &vs[i]); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func (e *Entries[V]) get(key string) *entry[V] {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en := e.cur[key]; en != nil {
		return en
	}
	en := e.prev[key]
	if en != nil {
		e.keep(key, en) // read lately: into the current generation
	}
	return en
}

func (e *Entries[V]) put(key string, en *entry[V]) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.keep(key, en)
}

func (e *Entries[V]) keep(key string, en *entry[V]) {
	if _, ok := e.cur[key]; !ok && len(e.cur) >= e.limit {
		e.prev, e.cur = e.cur, make(map[string]*entry[V], e.limit)
	}
	e.cur[key] = en
}

// Len is how many entries are kept (both generations; a key in both
// counts twice).
func (e *Entries[V]) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.cur) + len(e.prev)
}
