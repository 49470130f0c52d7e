package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Capabilities: a command runs with none, whatever its uid (issue 32: a
// command of a root daemon chowned, setcap'd and chattr'd files outside
// every write root, set the hostname, added addresses to lo and stepped
// the clock; Landlock has no right for any of these).
//
// execve computes the new program's sets from the thread that forks it:
// permitted = (inheritable & file inheritable) | (file permitted & bounding)
// | ambient. So a spawner thread that empties its own bounding set, its
// inheritable set and its ambient set once forks only children that execve
// with nothing, a root one included: a root program's "file permitted" is
// every capability, masked by the empty bounding set. The spawner's own
// effective set stays, so the fork can still set the command's uid, gid and
// cgroups. Once per pooled spawner, never per command.

// DropThreadCapabilities empties the calling thread's bounding, inheritable
// and ambient sets (lock the thread first). Without CAP_SETPCAP (an
// unprivileged daemon) the bounding set cannot be emptied, and need not
// be: no_new_privs keeps file capabilities from being gained.
func DropThreadCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	if hasEffective(unix.CAP_SETPCAP) {
		for c := 0; c <= lastCap(); c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				if errors.Is(err, unix.EINVAL) {
					break // past the kernel's last capability
				}
				return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
			}
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

func hasEffective(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

// lastCap is the kernel's highest capability number.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 63
	}
	return n
}
