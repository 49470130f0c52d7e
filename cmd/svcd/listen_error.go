package main

import (
	"errors"
	"fmt"
	"syscall"
)

// listenError explains a failed bind of the HTTP listener. The text keeps
// "listen on ADDR: " and the kernel's reason (the e2e harness re-picks a
// port on "address already in use") and names both ways to move it.
func listenError(addr string, err error) error {
	hint := "choose another address with -listen HOST:PORT or SVC_LISTEN=HOST:PORT"
	if errors.Is(err, syscall.EADDRINUSE) {
		hint = "another process holds it (is a daemon already running? `ss -ltnp` names it); " + hint
	}
	return fmt.Errorf("listen on %s: %w; %s (nothing was created)", addr, err, hint)
}
