package pluginkit

import (
	"context"
	"errors"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrSpawnerClosed is returned by Do after Close.
var ErrSpawnerClosed = errors.New("spawner closed")

// Spawner runs process starts on one goroutine locked to its OS thread.
//
// Linux delivers Pdeathsig when the *thread* that forked a child exits, not
// the process. Go may retire an idle thread that a locked goroutine left, so
// a child started from an arbitrary goroutine could be signalled at a random
// moment. Starting every child from this one pinned thread, which lives as
// long as the Spawner, makes Pdeathsig fire exactly when the parent process
// dies (or when Close lets the thread go).
type Spawner struct {
	reqs      chan spawnReq
	done      chan struct{}
	closeOnce sync.Once
	exited    chan struct{}
}

type spawnReq struct {
	fn   func() error
	errc chan error
}

// NewSpawner starts the pinned goroutine.
func NewSpawner() *Spawner {
	s := &Spawner{reqs: make(chan spawnReq), done: make(chan struct{}), exited: make(chan struct{})}
	go s.loop(nil)
	return s
}

// loop serves Do on its locked thread. pinned, when given, is closed once
// it is locked on a thread that is not the main one.
func (s *Spawner) loop(pinned chan<- struct{}) {
	// Never unlocked: when loop returns, the runtime ends the thread with it,
	// and children still started from it receive their Pdeathsig.
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The main thread, which Go lends to any goroutine while the main
		// goroutine waits. A spawner's thread may be moved into a
		// command's cgroups (the exec sandbox's armed spawners), and the
		// main thread there would take the whole process along: it is the
		// process in v1 cgroup.procs and /proc/self/cgroup, and the owner
		// of its memory in v1 memcg (charges, OOM kills). So the loop
		// moves to another thread; this one stays held until it has, so
		// the new goroutine cannot land here too.
		moved := make(chan struct{})
		go s.loop(moved)
		<-moved
		runtime.UnlockOSThread()
		return
	}
	if pinned != nil {
		close(pinned)
	}
	defer close(s.exited)
	for {
		select {
		case r := <-s.reqs:
			r.errc <- r.fn()
		case <-s.done:
			return
		}
	}
}

// Do runs fn (which should call exec.Cmd.Start or plugin.Client.Start) on
// the pinned thread and returns its error.
func (s *Spawner) Do(ctx context.Context, fn func() error) error {
	r := spawnReq{fn: fn, errc: make(chan error, 1)}
	select {
	case s.reqs <- r:
	case <-s.done:
		return ErrSpawnerClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.errc
}

// Close ends the pinned thread. Call it only after the children it started
// are gone, or to have the kernel signal those that are left.
func (s *Spawner) Close() {
	s.closeOnce.Do(func() { close(s.done) })
	<-s.exited
}
