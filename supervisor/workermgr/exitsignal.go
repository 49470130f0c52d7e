package workermgr

import "github.com/svcd/svcd/workers/pluginkit"

// Noticing a worker's exit without polling.
//
// go-plugin reaps the worker in its own goroutine and only offers Exited()
// to ask afterwards, so watch used to poll it every PollInterval (20 ms):
// 50 wake-ups a second per worker, each a thread taken from the two shared
// cores while a command of some caller may be running. A pidfd (Linux 5.4+)
// becomes readable when the process exits; on Go's netpoller it costs
// nothing until then. watch still polls, slowly, as a safety net, and fast
// once the pidfd has fired until go-plugin has reaped the process.

// pidExit returns a channel closed when process pid exits, and stop to
// release the pidfd when nobody waits any more. A nil channel means no
// pidfd on this kernel (or the process is already gone): poll instead.
func pidExit(pid int) (exited <-chan struct{}, stop func()) {
	p := pluginkit.OpenPidfd(pid)
	if p == nil {
		return nil, func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Exited()
	}()
	return done, p.Close
}
