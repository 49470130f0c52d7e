package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The layers that keep a command a stranger to the daemon (issue 32), as
// /v1/runtime and the start-up warning name them. Each says whether this
// host and configuration give it; one not given is also in Missing, with
// its fix, so exec_sandbox = "required" refuses to start without it.

// LayerReport is one of them.
type LayerReport struct {
	Name   string `json:"name"`
	Given  bool   `json:"given"`
	Detail string `json:"detail"`
}

// Layer names.
const (
	LayerCapabilities = "capabilities"
	LayerTerminal     = "terminal"
	LayerConnect      = "connect"
	LayerProc         = "proc"
	LayerSecrets      = "secrets"
	LayerFileRoutes   = "file_routes"
)

// Connect values of Report.Connect: how commands are kept from the
// daemon's own TCP ports.
const (
	ConnectLandlock = "landlock" // Landlock TCP rules (ABI 4+): every port but the daemon's
	ConnectNetns    = "netns"    // exec_network none: a network namespace per command
	ConnectOpen     = "open"
)

// connectMode is how c keeps commands from the daemon's ports on abi.
func connectMode(c Config, abi int) string {
	switch {
	case c.Network == NetworkNone:
		return ConnectNetns
	case abi >= 4 && len(c.DaemonPorts) > 0:
		return ConnectLandlock
	}
	return ConnectOpen
}

// strangerLayers fills r.Layers, r.Connect and r.LandlockGaps, and adds
// what is not given to r.Missing.
func (r *Report) strangerLayers(c Config) {
	abi := r.Landlock.ABI
	otherUID := r.Identity.UID != os.Geteuid()
	bounding := canEmptyBounding()
	r.Connect = connectMode(c, abi)
	r.LandlockGaps = LandlockGaps(abi, GapContext{NetworkNone: c.Network == NetworkNone, OtherUID: otherUID, NoTerminal: true, NoCaps: true})

	caps := "none: bounding, inheritable and ambient sets emptied in each spawner, so execve gives nothing"
	if !bounding {
		caps = "none: the daemon has no capability and no_new_privs keeps commands from gaining one (its bounding set cannot be emptied without CAP_SETPCAP)"
	}
	connect := map[string]string{
		ConnectLandlock: fmt.Sprintf("Landlock TCP rules: no connect to the daemon's ports %v", c.DaemonPorts),
		ConnectNetns:    "exec_network none: each command has its own network namespace",
		ConnectOpen:     fmt.Sprintf("open: Landlock ABI %d has no TCP rules (Linux 6.7+), so commands can connect to the daemon's ports; set exec_network = \"none\"", abi),
	}[r.Connect]
	hides := c.HidesFiles(abi)
	secrets := "Landlock read rules leave out the data dir, token file, config file and log file"
	switch {
	case hides && otherUID:
		secrets += "; and exec_user is another uid (data dir 0700, token 0600, snapshots 0600)"
	case !hides && otherUID:
		secrets = "exec_user is another uid: the data dir (0700), token file (0600) and raft snapshots (0600) are closed to it"
	case !hides:
		secrets = "open: commands run as the daemon's uid and can read its data dir and token file (Landlock, without exec_read_roots or a write root covering the data dir, hides them; or run the daemon as root with exec_user)"
	}
	r.Layers = []LayerReport{
		{LayerCapabilities, true, caps},
		{LayerTerminal, true, "none: each command leads its own session with stdin on /dev/null, so /dev/tty and TIOCSTI fail"},
		{LayerConnect, r.Connect != ConnectOpen, connect},
		{LayerProc, true, "every svcd process is non-dumpable: /proc/<pid>/environ, maps, mem and fd need CAP_SYS_PTRACE"},
		{LayerSecrets, hides || otherUID, secrets},
		{LayerFileRoutes, true, "files/read and files/write open beneath their root in one step (os.Root); FIFOs, sockets and devices answer not_regular_file"},
	}
	for _, l := range r.Layers {
		if !l.Given {
			r.Missing = append(r.Missing, l.Name+": "+l.Detail)
		}
	}
	for _, g := range r.LandlockGaps {
		if g.Covered == "open" {
			r.Missing = append(r.Missing, "landlock: "+g.String())
		}
	}
}

// canEmptyBounding: this process may drop capabilities from its threads'
// bounding sets (CAP_SETPCAP), as DropThreadCapabilities does.
func canEmptyBounding() bool {
	return hasEffective(unix.CAP_SETPCAP)
}
