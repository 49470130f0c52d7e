package sandbox

import (
	"net"
	"runtime"
	"strconv"
	"testing"
)

// A thread under the connect ruleset reaches every port but the denied
// ones; other threads are not restricted.
func TestConnectRulesetDeniesOnlyTheDaemonPorts(t *testing.T) {
	abi := LandlockABI()
	if abi < 4 {
		t.Skipf("Landlock ABI %d has no TCP rules", abi)
	}
	listen := func() (net.Listener, uint16) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		return ln, uint16(ln.Addr().(*net.TCPAddr).Port)
	}
	daemon, dport := listen()
	defer daemon.Close()
	other, oport := listen()
	defer other.Close()
	rs, err := NewConnectRuleset(abi, []uint16{dport})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	errc := make(chan [2]error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the restricted thread is thrown away
		if err := SetNoNewPrivs(); err != nil {
			errc <- [2]error{err, err}
			return
		}
		if err := rs.RestrictThread(); err != nil {
			errc <- [2]error{err, err}
			return
		}
		dial := func(p uint16) error {
			c, err := dialFromThisThread("127.0.0.1:" + strconv.Itoa(int(p)))
			if err == nil {
				c.Close()
			}
			return err
		}
		errc <- [2]error{dial(dport), dial(oport)}
	}()
	errs := <-errc
	if errs[0] == nil || errs[1] != nil {
		t.Fatalf("daemon port %d: %v (want refused); other port %d: %v (want connected)", dport, errs[0], oport, errs[1])
	}
}

// dialFromThisThread connects with a blocking connect(2) on the calling
// thread (net.Dial would connect from the poller's threads too).
func dialFromThisThread(addr string) (interface{ Close() error }, error) {
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	fd, err := unixSocket()
	if err != nil {
		return nil, err
	}
	return fd, fd.connect(tcp)
}
