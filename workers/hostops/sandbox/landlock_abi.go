package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// What each Landlock ABI adds, and what the sandbox does without it. The
// ruleset is built by one pure function of the ABI (handledFor) so that
// every ABI, not only this host's, is covered by a unit test.
//
//	ABI 1 (5.13): the file system rights; a file never moves to another
//	       directory (rename/link across directories is always refused)
//	ABI 2 (5.19): REFER, so such moves work inside the write roots
//	ABI 3 (6.2):  TRUNCATE
//	ABI 4 (6.7):  TCP bind/connect rules (access_net)
//	ABI 5 (6.10): IOCTL_DEV, ioctl on device files
//	ABI 6 (6.12): scopes: signals and abstract unix sockets stay in the domain
//	ABI 7 (6.15): audit logging flags (nothing the sandbox needs)

// handled is what a ruleset handles (denies unless a rule allows) for an
// ABI, and the size of the ruleset attribute that ABI's kernel accepts.
type handled struct {
	FS     uint64
	Net    uint64
	Scoped uint64
	Size   uintptr
}

// handledFor builds the ruleset attribute for r under abi: a pure
// function, unit-tested for ABI 0 to 7.
func handledFor(abi int, r Ruleset) handled {
	if abi < 1 {
		return handled{}
	}
	h := handled{FS: fsWrite(abi, r.Sockets), Size: 8}
	if r.Read != nil {
		h.FS |= fsRead
	}
	if abi >= 5 && r.IoctlDev {
		h.FS |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 4 {
		h.Size = 16
		if len(r.ConnectPorts) > 0 {
			h.Net = unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		}
	}
	if abi >= 6 {
		h.Size = unsafe.Sizeof(unix.LandlockRulesetAttr{})
		if r.Scoped {
			h.Scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
		}
	}
	return h
}

// LandlockGap is one thing a command's Landlock domain does not stop on
// this host's ABI, and what stops it instead ("open" when nothing does).
type LandlockGap struct {
	Right   string `json:"right"`
	NeedABI int    `json:"need_abi"`
	Covered string `json:"covered"`
}

// GapContext is what can cover a missing right.
type GapContext struct {
	NetworkNone bool // exec_network = "none": a network namespace per command
	OtherUID    bool // commands run as a uid other than the daemon's
	NoTerminal  bool // commands have no controlling terminal (always, since issue 32)
	NoCaps      bool // commands have no capability
}

// LandlockGaps lists, for abi, each right the sandbox would use that the
// kernel lacks, with what covers it. ABI 7 has none.
func LandlockGaps(abi int, c GapContext) []LandlockGap {
	var gaps []LandlockGap
	add := func(need int, right, covered string) {
		if abi < need {
			gaps = append(gaps, LandlockGap{Right: right, NeedABI: need, Covered: covered})
		}
	}
	if abi < 1 {
		add(1, "file system write roots", orOpen(c.OtherUID, "file permissions only: commands run as exec_user"))
	}
	add(2, "REFER (rename or link into another directory)", "stricter without it: such a move is always refused, inside the write roots too")
	add(3, "TRUNCATE", orOpen(c.OtherUID, "file permissions only (exec_user): truncate(2) outside the write roots is not checked by Landlock"))
	add(4, "TCP connect rules (the daemon's API, raft and agentd ports)", orOpen(c.NetworkNone, "exec_network = \"none\": each command has its own network namespace"))
	add(5, "IOCTL_DEV (ioctl on device files)", orOpen(c.NoTerminal && c.NoCaps, "no controlling terminal and no capability: TIOCSTI and device ioctls needing CAP_SYS_ADMIN fail"))
	add(6, "scope: signals to processes outside the domain", orOpen(c.OtherUID, "exec_user: a signal to another uid needs CAP_KILL, which commands lack"))
	add(6, "scope: abstract unix sockets outside the domain", orOpen(c.NetworkNone, "exec_network = \"none\": abstract sockets belong to the network namespace"))
	return gaps
}

func orOpen(ok bool, how string) string {
	if ok {
		return how
	}
	return "open"
}

// String is one line for the start-up warning.
func (g LandlockGap) String() string {
	return fmt.Sprintf("%s (Landlock ABI %d): %s", g.Right, g.NeedABI, g.Covered)
}
