package supervisor

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
)

// StateIndexHeader carries the raft index applied on the answering node when
// the answer was written. On a write it is at least the index of the write
// itself, so a caller that reads afterwards can tell its own write is in what
// it reads (compare with the same header on the read).
const StateIndexHeader = "X-Svcd-State-Index"

// indexWriter sets StateIndexHeader just before the status line goes out,
// that is after the handler's raft write has been applied.
type indexWriter struct {
	http.ResponseWriter
	index func() uint64
	done  bool
}

func (w *indexWriter) stamp() {
	if !w.done {
		w.done = true
		w.Header().Set(StateIndexHeader, strconv.FormatUint(w.index(), 10))
	}
}

func (w *indexWriter) WriteHeader(code int) {
	w.stamp()
	w.ResponseWriter.WriteHeader(code)
}

func (w *indexWriter) Write(b []byte) (int, error) {
	w.stamp()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (w *indexWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush keeps streaming answers streaming.
func (w *indexWriter) Flush() {
	w.stamp()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack passes WebSocket upgrades through.
func (w *indexWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}
