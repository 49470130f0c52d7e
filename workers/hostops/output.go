package hostops

import (
	"io"
	"sync"
)

// cappedBuffer keeps the first cap bytes of a stream and counts the rest, so
// a chatty command can neither exhaust memory nor block on a full pipe.
type cappedBuffer struct {
	mu        sync.Mutex
	cap       int
	buf       []byte
	truncated bool
}

func newCappedBuffer(cap int) *cappedBuffer { return &cappedBuffer{cap: cap} }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.cap - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	if room > 0 {
		b.buf = append(b.buf, p[:room]...)
	}
	b.truncated = true
	return len(p), nil
}

// drain copies r into b until EOF or a read error (the read end was closed),
// through a buffer from bufs.
func (b *cappedBuffer) drain(r io.Reader, bufs *sync.Pool) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = b.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (b *cappedBuffer) result() ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf, b.truncated
}

// newReadBufs pools drain buffers. Two fresh 32 KB buffers per command
// were most of the worker's garbage: a GC cycle every few dozen commands,
// each waking threads on a machine that is busy running the commands.
func newReadBufs() *sync.Pool {
	return &sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
}
