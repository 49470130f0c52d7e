// Package keyrange is a range of string keys and a sorted set of keys that
// is walked over one. A page of GET /v1/browser covers a range of record
// keys and shows the relay targets whose keys fall in it; the FSM and the
// relay engine keep their targets' keys sorted so that finding those is a
// binary search and a walk of the range's own length, not a scan of every
// target.
package keyrange

import "slices"

// Range is the keys after After (exclusive; "" from the first key) up to
// Through (inclusive) when Bounded. The zero Range holds every key; None
// holds none.
type Range struct {
	None    bool
	After   string
	Through string
	Bounded bool
}

// Has says whether key is in r.
func (r Range) Has(key string) bool {
	if r.None || key <= r.After && r.After != "" {
		return false
	}
	return !r.Bounded || key <= r.Through
}

// Keys is a sorted set of keys. The zero Keys is empty.
type Keys struct{ sorted []string }

// Reset makes k hold exactly the keys of m.
func Reset[V any](k *Keys, m map[string]V) {
	k.sorted = make([]string, 0, len(m))
	for key := range m {
		k.sorted = append(k.sorted, key)
	}
	slices.Sort(k.sorted)
}

// Add puts key in k (once).
func (k *Keys) Add(key string) {
	if i, found := slices.BinarySearch(k.sorted, key); !found {
		k.sorted = slices.Insert(k.sorted, i, key)
	}
}

// Remove takes key out of k.
func (k *Keys) Remove(key string) {
	if i, found := slices.BinarySearch(k.sorted, key); found {
		k.sorted = slices.Delete(k.sorted, i, i+1)
	}
}

// Len is how many keys k holds.
func (k *Keys) Len() int { return len(k.sorted) }

// Walk calls fn for each key of k in r, in order, until fn returns false.
func (k *Keys) Walk(r Range, fn func(key string) bool) {
	if r.None {
		return
	}
	i := 0
	if r.After != "" {
		i, _ = slices.BinarySearch(k.sorted, r.After)
	}
	for ; i < len(k.sorted); i++ {
		key := k.sorted[i]
		if !r.Has(key) {
			if r.Bounded && key > r.Through {
				return
			}
			continue // After itself
		}
		if !fn(key) {
			return
		}
	}
}
