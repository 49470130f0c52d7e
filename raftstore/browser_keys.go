package raftstore

import "sort"

// recordKeys orders the browser records by key, the order of GET
// /v1/browser's records: a page is a binary search for its cursor and a
// walk of its own length, not a sort of every record per request. It also
// counts each client's records (a live client without any shows as an
// active_only record). Derived from Records (not in snapshots): normalize
// rebuilds it; record and its eviction keep it.
type recordKeys struct {
	keys     []recordKey // sorted by key
	byClient map[string]int
}

type recordKey struct{ key, client string }

func (x *recordKeys) reset(records map[string]*BrowserRecord) {
	x.keys, x.byClient = make([]recordKey, 0, len(records)), map[string]int{}
	for k, r := range records {
		x.keys = append(x.keys, recordKey{k, r.ClientID})
		x.byClient[r.ClientID]++
	}
	sort.Slice(x.keys, func(i, j int) bool { return x.keys[i].key < x.keys[j].key })
}

// search is the place of the first key >= key.
func (x *recordKeys) search(key string) int {
	return sort.Search(len(x.keys), func(i int) bool { return x.keys[i].key >= key })
}

func (x *recordKeys) add(key, client string) {
	i := x.search(key)
	if i < len(x.keys) && x.keys[i].key == key {
		return
	}
	x.keys = append(x.keys, recordKey{})
	copy(x.keys[i+1:], x.keys[i:])
	x.keys[i] = recordKey{key, client}
	x.byClient[client]++
}

func (x *recordKeys) remove(key string) {
	i := x.search(key)
	if i == len(x.keys) || x.keys[i].key != key {
		return
	}
	if c := x.keys[i].client; x.byClient[c] <= 1 {
		delete(x.byClient, c)
	} else {
		x.byClient[c]--
	}
	x.keys = append(x.keys[:i], x.keys[i+1:]...)
}

// RecordsAfter calls fn for each record whose key sorts after after ("":
// from the first), in key order, until fn returns false. Like all of
// State, only inside Node.Read.
func (b *BrowserState) RecordsAfter(after string, fn func(r *BrowserRecord) bool) {
	i := 0
	if after != "" {
		i = b.index.search(after)
		if i < len(b.index.keys) && b.index.keys[i].key == after {
			i++
		}
	}
	for ; i < len(b.index.keys); i++ {
		if r := b.Records[b.index.keys[i].key]; r != nil && !fn(r) {
			return
		}
	}
}

// HasRecords says whether client has captured at least one record.
func (b *BrowserState) HasRecords(client string) bool { return b.index.byClient[client] > 0 }
