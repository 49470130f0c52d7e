package jsoncache

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/svcd/svcd/shared/api"
)

// item counts its encodings.
type item struct {
	Name string `json:"name"`
	N    int    `json:"n"`
}

// plain is item without the counting.
type plain item

var encodings atomic.Int64

func (i item) MarshalJSON() ([]byte, error) {
	encodings.Add(1)
	return api.AppendJSON(nil, plain(i))
}

func sameItem(a, b *item) bool { return *a == *b }
func cloneItem(v *item) item   { return *v }

// An unchanged value is written from the kept bytes (no encoding); a
// changed one is encoded again; the bytes are always api.AppendJSON's
// for the value given; at most 2×limit entries are kept however many
// keys pass; concurrent readers and writers agree (run with -race).
func TestEntriesReuseOnlyTheSame(t *testing.T) {
	e := New(8, sameItem, cloneItem)
	check := func(key string, v item) {
		t.Helper()
		got, err := e.Append([]byte("["), key, &v)
		want, _ := api.AppendJSON([]byte("["), plain(v))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s %+v: %s %v, want %s", key, v, got, err, want)
		}
	}
	base := encodings.Load()
	check("a", item{"a", 1})
	check("a", item{"a", 1})
	check("a", item{"a", 1})
	if n := encodings.Load() - base; n != 1 {
		t.Fatalf("%d encodings for an unchanged value read three times, want 1", n)
	}
	check("a", item{"a", 2}) // changed: encoded again
	check("a", item{"a", 2})
	if n := encodings.Load() - base; n != 2 {
		t.Fatalf("%d encodings of a value and its one change, want 2", n)
	}
	for i := 0; i < 100; i++ {
		check(fmt.Sprint("k", i), item{"k", i})
		if e.Len() > 16 {
			t.Fatalf("%d entries kept, limit 8 per generation", e.Len())
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				v := item{"k", i % 5}
				check(fmt.Sprint("k", i%12), v)
			}
		}()
	}
	wg.Wait()
}

// AppendList writes a list as api.AppendJSON writes the slice, kept
// entries included; an empty list is [].
func TestAppendListIsTheSlicesJSON(t *testing.T) {
	e := New(8, sameItem, cloneItem)
	key := func(v *item) string { return v.Name }
	for _, vs := range [][]item{{}, {{"a", 1}}, {{"a", 1}, {"b", 2}, {"c", 3}}, {{"a", 1}, {"b", 5}}} {
		got, err := e.AppendList([]byte("x:"), vs, key)
		ps := make([]plain, len(vs))
		for i, v := range vs {
			ps[i] = plain(v)
		}
		want, _ := api.AppendJSON([]byte("x:"), ps)
		if err != nil || string(got) != string(want) {
			t.Errorf("%+v: %s %v, want %s", vs, got, err, want)
		}
	}
}
