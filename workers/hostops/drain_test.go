package hostops

import (
	"bytes"
	"io"
	"os"
	"testing"
	"time"
)

// The command has ended and every writer is gone, but the reader of its
// output has not run yet (a loaded machine): the output still in the pipe
// is the call's, and awaitDrains must not cut it off at the kill grace.
// (The old code closed the pipes after the grace and the call reported the
// output whole without its end: 294912 of 300000 bytes in a parallel make
// test.) The reader is held back well past the grace here, by a channel,
// so the outcome does not depend on the machine.
func TestAwaitDrainsWaitsForAReaderBehind(t *testing.T) {
	l := newTestLocal(t, func(c *Config) { c.KillGraceMs = 20 })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("x"), 60000) // within one pipe buffer
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	w.Close() // the command is gone
	release := make(chan struct{})
	drained := make(chan struct{}, 1)
	var got []byte
	go func() {
		<-release // the reader has not been scheduled yet
		got, _ = io.ReadAll(r)
		drained <- struct{}{}
	}()
	go func() { time.Sleep(300 * time.Millisecond); close(release) }() // 15 graces late
	l.awaitDrains(drained, r)
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d of %d bytes", len(got), len(want))
	}
}

// A pipe that a process outside the group still holds, silent, is given up
// after the grace as before: nothing is waiting in it.
func TestAwaitDrainsGivesUpOnAHeldSilentPipe(t *testing.T) {
	l := newTestLocal(t, func(c *Config) { c.KillGraceMs = 50 })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // held open: no EOF
	drained := make(chan struct{}, 1)
	go func() { _, _ = io.ReadAll(r); drained <- struct{}{} }()
	start := time.Now()
	l.awaitDrains(drained, r)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("waited %s for a silent pipe", d)
	}
}
