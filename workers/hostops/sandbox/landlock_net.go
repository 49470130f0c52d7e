package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock's TCP rules (ABI 4) are an allow-list of ports: a domain that
// handles CONNECT_TCP refuses a connect to every port without a rule, on
// every address. To refuse only the daemon's own ports (its API, raft and
// agentd listeners: issue 32's "the API is not a back door"), every other
// port gets a rule. That is 65 533 landlock_add_rule calls, tens of
// milliseconds: so the worker builds that ruleset once (NewConnectRuleset)
// and each spawner stacks it as a second Landlock layer over its own file
// system ruleset (landlock_restrict_self takes the same ruleset in any
// number of threads), never per command.

// ConnectRuleset is a ruleset allowing TCP connects to every port but the
// daemon's; Close it when no spawner will be made any more.
type ConnectRuleset struct{ fd int }

// NewConnectRuleset builds it (abi 4 or more).
func NewConnectRuleset(abi int, deny []uint16) (*ConnectRuleset, error) {
	if abi < 4 {
		return nil, fmt.Errorf("Landlock ABI %d has no TCP rules (ABI 4, Linux 6.7)", abi)
	}
	attr := unix.LandlockRulesetAttr{Access_net: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP}
	rfd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 16, 0)
	if e != 0 {
		return nil, fmt.Errorf("landlock_create_ruleset (net): %w", e)
	}
	if err := allowConnectPorts(rfd, ConnectPortsExcept(deny)); err != nil {
		unix.Close(int(rfd))
		return nil, err
	}
	return &ConnectRuleset{fd: int(rfd)}, nil
}

// RestrictThread stacks the ruleset on the calling thread (locked, with
// no_new_privs already set by RestrictThread or SetNoNewPrivs).
func (c *ConnectRuleset) RestrictThread() error {
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(c.fd), 0, 0); e != 0 {
		return fmt.Errorf("landlock_restrict_self (net): %w", e)
	}
	return nil
}

// Close releases the ruleset (domains already made keep it).
func (c *ConnectRuleset) Close() {
	if c != nil && c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

// ConnectPortsExcept is every TCP port but port 0 and those in deny.
func ConnectPortsExcept(deny []uint16) []uint16 {
	skip := map[uint16]bool{0: true}
	for _, p := range deny {
		skip[p] = true
	}
	out := make([]uint16, 0, 65536-len(skip))
	for p := 1; p <= 65535; p++ {
		if !skip[uint16(p)] {
			out = append(out, uint16(p))
		}
	}
	return out
}

// netPortAttr is struct landlock_net_port_attr (packed: 16 bytes), which
// golang.org/x/sys does not define.
type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// ruleNetPort is LANDLOCK_RULE_NET_PORT.
const ruleNetPort = 2

func allowConnectPorts(rfd uintptr, ports []uint16) error {
	for _, p := range ports {
		na := netPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(p)}
		if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, rfd, ruleNetPort, uintptr(unsafe.Pointer(&na)), 0, 0, 0); e != 0 {
			return fmt.Errorf("landlock_add_rule port %d: %w", p, e)
		}
	}
	return nil
}
