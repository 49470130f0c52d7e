package hostops

import (
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
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

// drain copies f into b until EOF, through a buffer from bufs. When the
// kill grace ends reading (awaitDrains sets a read deadline: something that
// left the group still holds the pipe), what the pipe already holds is
// taken too (drainBuffered): a reader the scheduler ran late must not lose
// output the command wrote before it ended.
func (b *cappedBuffer) drain(f *os.File, bufs *sync.Pool) {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	for {
		n, err := f.Read(buf)
		if n > 0 {
			_, _ = b.Write(buf[:n])
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			b.drainBuffered(f, buf)
			return
		}
		if err != nil {
			return
		}
	}
}

// finalReads bounds drainBuffered: a writer that outlived the group may
// keep writing; what it writes after the grace is not the command's output.
const finalReads = 64

// drainBuffered reads what the pipe holds now, without waiting for more.
func (b *cappedBuffer) drainBuffered(f *os.File, buf []byte) {
	if f.SetReadDeadline(time.Time{}) != nil {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		for i := 0; i < finalReads; i++ {
			n, err := unix.Read(int(fd), buf)
			if n <= 0 || err != nil {
				break
			}
			_, _ = b.Write(buf[:n])
		}
		return true // done: never wait on the poller for more
	})
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
