package supervisor

import (
	"strconv"
)

// StateIndexHeader carries the raft index applied on the answering node when
// the answer was written. On a write it is at least the index of the write
// itself, so a caller that reads afterwards can tell its own write is in what
// it reads (compare with the same header on the read).
const StateIndexHeader = "X-Svcd-State-Index"

// stampIndex sets StateIndexHeader just before the status line goes out,
// that is after the handler's raft write has been applied. It stamps once.
func (w *responseWriter) stampIndex() {
	if w.index != nil {
		// The constant is in canonical form: no need for Header.Set's
		// canonicalization on every answer.
		w.Header()[StateIndexHeader] = []string{strconv.FormatUint(w.index(), 10)}
		w.index = nil
	}
}
