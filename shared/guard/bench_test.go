package guard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkGuards measures what the Host and write guards add to a JSON
// write, against the same handler unguarded in the same run (scripts/bench
// prints the ratio).
func BenchmarkGuards(b *testing.B) {
	p := New("127.0.0.1:4317", nil, []string{"chrome-extension://abcdefghijklmnop"})
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	run := func(b *testing.B, h http.Handler) {
		for i := 0; i < b.N; i++ {
			req := httptest.NewRequest("POST", "http://127.0.0.1:4317/v1/system/pause", strings.NewReader(`{"reason":"x"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", "http://127.0.0.1:4317")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Code)
			}
		}
	}
	b.Run("baseline", func(b *testing.B) { run(b, ok) })
	b.Run("guarded", func(b *testing.B) { run(b, p.Hosts(p.Writes(ok))) })
}
