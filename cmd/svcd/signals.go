package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/svcd/svcd/shared/reload"
)

// exitSecondSignal is the status of a process stopped by a second SIGTERM or
// SIGINT: not 0, so systemd's Restart=on-failure sees a stop that did not
// drain.
const exitSecondSignal = 1

// handleSignals is what a HashiCorp daemon does with signals: the first
// SIGINT or SIGTERM cancels the returned context (the subcommand drains), a
// second one exits at once; SIGHUP runs the reloaders the subcommand added to
// the Set in the context and never ends the process (before issue 35 it
// killed the daemon with no log line and a status systemd counted as clean).
func handleSignals(parent context.Context) (context.Context, func()) {
	set := &reload.Set{}
	ctx, cancel := context.WithCancel(reload.WithSet(parent, set))
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		stopping := false
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				switch {
				case s == syscall.SIGHUP:
					set.Run()
				case !stopping:
					stopping = true
					cancel()
				default:
					fmt.Fprintf(os.Stderr, "svcd: second %s while draining: stopping at once\n", s)
					os.Exit(exitSecondSignal)
				}
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
