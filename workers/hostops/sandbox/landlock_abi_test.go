package sandbox

import (
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ruleset each ABI gets, built by the pure handledFor: this host is
// ABI 7, and the hosts users have run ABI 1 to 6 or none (issue 31). Each
// attribute is also handed to this kernel, which accepts every older
// ABI's smaller attribute: it must take each one.
func TestRulesetPerABI(t *testing.T) {
	r := Ruleset{Read: []string{"/"}, Sockets: true, Scoped: true, IoctlDev: true, ConnectPorts: []uint16{80}}
	for abi := 0; abi <= 7; abi++ {
		h := handledFor(abi, r)
		has := func(bit uint64) bool { return h.FS&bit != 0 }
		if abi == 0 {
			if h != (handled{}) {
				t.Fatalf("ABI 0: %+v, want nothing", h)
			}
			continue
		}
		want := map[string]bool{
			"write":    true,
			"read":     true,
			"refer":    abi >= 2,
			"truncate": abi >= 3,
			"net":      abi >= 4,
			"ioctl":    abi >= 5,
			"scoped":   abi >= 6,
		}
		got := map[string]bool{
			"write":    has(unix.LANDLOCK_ACCESS_FS_WRITE_FILE) && has(unix.LANDLOCK_ACCESS_FS_MAKE_SOCK),
			"read":     has(unix.LANDLOCK_ACCESS_FS_READ_FILE),
			"refer":    has(unix.LANDLOCK_ACCESS_FS_REFER),
			"truncate": has(unix.LANDLOCK_ACCESS_FS_TRUNCATE),
			"net":      h.Net == unix.LANDLOCK_ACCESS_NET_CONNECT_TCP,
			"ioctl":    has(unix.LANDLOCK_ACCESS_FS_IOCTL_DEV),
			"scoped":   h.Scoped == unix.LANDLOCK_SCOPE_SIGNAL|unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET,
		}
		for k := range want {
			if got[k] != want[k] {
				t.Errorf("ABI %d: %s handled %v, want %v (%+v)", abi, k, got[k], want[k], h)
			}
		}
		wantSize := map[bool]uintptr{true: 8}[abi < 4]
		switch {
		case abi >= 6:
			wantSize = unsafe.Sizeof(unix.LandlockRulesetAttr{})
		case abi >= 4:
			wantSize = 16
		}
		if h.Size != wantSize {
			t.Errorf("ABI %d: attribute size %d, want %d", abi, h.Size, wantSize)
		}
		if host := LandlockABI(); host >= abi {
			attr := unix.LandlockRulesetAttr{Access_fs: h.FS, Access_net: h.Net, Scoped: h.Scoped}
			fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), h.Size, 0)
			if e != 0 {
				t.Errorf("ABI %d: this kernel (ABI %d) refused the ruleset: %v", abi, host, e)
			} else {
				unix.Close(int(fd))
			}
		}
	}
	// Nothing asked, nothing handled beyond the file system writes.
	if h := handledFor(7, Ruleset{}); h.Net != 0 || h.Scoped != 0 || h.FS&unix.LANDLOCK_ACCESS_FS_IOCTL_DEV != 0 || h.FS&unix.LANDLOCK_ACCESS_FS_READ_FILE != 0 {
		t.Errorf("ABI 7 with an empty ruleset: %+v", h)
	}
}

// Each ABI lists exactly the rights it lacks, each with what covers it, or
// "open" when the configuration leaves nothing in its place.
func TestLandlockGapsPerABI(t *testing.T) {
	wantRights := map[int][]string{
		0: {"file system", "REFER", "TRUNCATE", "TCP", "IOCTL_DEV", "signals", "abstract"},
		1: {"REFER", "TRUNCATE", "TCP", "IOCTL_DEV", "signals", "abstract"},
		2: {"TRUNCATE", "TCP", "IOCTL_DEV", "signals", "abstract"},
		3: {"TCP", "IOCTL_DEV", "signals", "abstract"},
		4: {"IOCTL_DEV", "signals", "abstract"},
		5: {"signals", "abstract"},
		6: nil,
		7: nil,
	}
	bare := GapContext{}
	full := GapContext{NetworkNone: true, OtherUID: true, NoTerminal: true, NoCaps: true}
	for abi := 0; abi <= 7; abi++ {
		gaps := LandlockGaps(abi, bare)
		if len(gaps) != len(wantRights[abi]) {
			t.Fatalf("ABI %d: %v, want %v", abi, gaps, wantRights[abi])
		}
		for i, g := range gaps {
			if !strings.Contains(g.Right, wantRights[abi][i]) || g.NeedABI <= abi {
				t.Errorf("ABI %d gap %d: %+v, want %s", abi, i, g, wantRights[abi][i])
			}
			// Without exec_user or exec_network none, every gap but the
			// stricter REFER is open.
			if open := g.Covered == "open"; open == strings.Contains(g.Right, "REFER") {
				t.Errorf("ABI %d, bare config: %s", abi, g)
			}
		}
		for _, g := range LandlockGaps(abi, full) {
			if g.Covered == "open" {
				t.Errorf("ABI %d with exec_user and exec_network none: %s still open", abi, g)
			}
		}
	}
}
