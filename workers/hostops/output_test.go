package hostops

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// The kill grace ended reading while the reader had not run yet (a loaded
// machine): what the pipe already holds is still the command's output and
// must be taken, with the write end still held open by something that left
// the group. Closing the pipe at the grace lost it (5 KB of 300 KB in
// TestExecWaitModes under load).
func TestDrainTakesWhatThePipeHoldsAfterTheGrace(t *testing.T) {
	r, w, err := outputPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()                                        // held open: no EOF will come
	want := bytes.Repeat([]byte("0123456789abcdef"), 3000) // 48 KB, under a pipe buffer
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	// What awaitDrains does when the grace ends, before the reader ran.
	if err := r.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	b := newCappedBuffer(1 << 20)
	done := make(chan struct{})
	go func() { b.drain(r, newReadBufs()); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("drain waited for more output after its deadline")
	}
	got, truncated := b.result()
	if !bytes.Equal(got, want) || truncated {
		t.Fatalf("drained %d bytes (truncated %v), want the %d the pipe held", len(got), truncated, len(want))
	}
}

// awaitDrains ends a reader blocked on a pipe that something still holds
// after the grace, and the reader keeps what it had read.
func TestAwaitDrainsEndsAHeldPipeAfterTheGrace(t *testing.T) {
	r, w, err := outputPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("before the grace\n")); err != nil {
		t.Fatal(err)
	}
	b := newCappedBuffer(1 << 10)
	drained := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); b.drain(r, newReadBufs()); drained <- struct{}{} }()
	finished := make(chan struct{})
	go func() { awaitDrains(50*time.Millisecond, drained, r); close(finished) }()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("awaitDrains did not end a held pipe")
	}
	wg.Wait()
	if got, _ := b.result(); string(got) != "before the grace\n" {
		t.Fatalf("kept %q", got)
	}
}
