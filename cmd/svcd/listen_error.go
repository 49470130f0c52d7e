package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listenError explains a failed bind of the HTTP listener. The text keeps
// "listen on ADDR: " and the kernel's reason (the e2e harness re-picks a
// port on "address already in use") and names both ways to move it.
func listenError(addr string, err error) error {
	return bindError("listen on "+addr, "-listen HOST:PORT or SVC_LISTEN=HOST:PORT", err)
}

func bindError(what, move string, err error) error {
	hint := "choose another address with " + move
	if errors.Is(err, syscall.EADDRINUSE) {
		hint = "another process holds it (is a daemon already running? `ss -ltnp` names it); " + hint
	}
	return fmt.Errorf("%s: %w; %s (nothing was created)", what, err, hint)
}

// probeRaftAddr checks, before anything is created, that raft's TCP
// address can be bound; raft binds it for real once the data dir is ready.
// A port taken in between still fails later, with raft's own error.
func probeRaftAddr(addr string) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return bindError("raft listen on "+addr, "-raft-addr HOST:PORT or SVC_RAFT_ADDR=HOST:PORT", err)
	}
	return ln.Close()
}
