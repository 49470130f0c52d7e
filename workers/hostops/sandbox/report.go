package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// Report says what protects the host from an exec command.
type Report struct {
	Mode       string         `json:"mode"`
	Cgroup     CgroupReport   `json:"cgroup"`
	Limits     Limits         `json:"limits"`
	MaxLimits  Limits         `json:"max_limits"`
	Landlock   LandlockReport `json:"landlock"`
	NoNewPrivs bool           `json:"no_new_privs"`
	Identity   IdentityReport `json:"identity"`
	Network    string         `json:"network"`
	// Connect is how commands are kept from the daemon's own TCP ports:
	// landlock, netns or open (layers.go).
	Connect string `json:"connect"`
	// Layers are the layers that keep a command a stranger to the daemon
	// (issue 32), each given or not on this host.
	Layers []LayerReport `json:"layers,omitempty"`
	// LandlockGaps are the Landlock rights this kernel's ABI lacks, each
	// with what covers it ("open" when nothing does).
	LandlockGaps []LandlockGap `json:"landlock_gaps,omitempty"`
	// Missing names each layer the host does not give, and how to get it.
	Missing []string `json:"missing,omitempty"`
}

// CgroupReport: mode is "v2", "v2+v1" (v2 membership, v1 limits), "v1" or
// "none" (process group only).
type CgroupReport struct {
	Mode        string   `json:"mode"`
	Parent      string   `json:"parent,omitempty"`
	Controllers []string `json:"controllers"`
}

// LandlockReport: ABI 0 is no Landlock.
type LandlockReport struct {
	ABI        int      `json:"abi"`
	WriteRoots []string `json:"write_roots,omitempty"`
	ReadRoots  []string `json:"read_roots,omitempty"` // empty: everything
}

// IdentityReport is who commands run as.
type IdentityReport struct {
	User  string `json:"user"`
	Group string `json:"group,omitempty"`
	UID   int    `json:"uid"`
	GID   int    `json:"gid"`
}

// Levels is the report without paths, for /health.
func (r Report) Levels() map[string]any {
	return map[string]any{
		"mode":         r.Mode,
		"cgroup":       r.Cgroup.Mode,
		"controllers":  r.Cgroup.Controllers,
		"landlock_abi": r.Landlock.ABI,
		"no_new_privs": r.NoNewPrivs,
		"unprivileged": r.Identity.UID != 0,
		"network":      r.Network,
		"missing":      len(r.Missing),
	}
}

// WithoutPaths is the report for a caller without the token: the cgroup
// parent and the Landlock roots name directories of the host (the data dir
// among them, where the token file lives), and a missing layer's message
// may too, so those keep only the layer's name.
func (r Report) WithoutPaths() Report {
	r.Cgroup.Parent = ""
	r.Landlock.WriteRoots, r.Landlock.ReadRoots = nil, nil
	if len(r.Missing) > 0 {
		missing := make([]string, len(r.Missing))
		for i, m := range r.Missing {
			layer, _, _ := strings.Cut(m, ":")
			missing[i] = layer + ": (details for a caller with the token)"
		}
		r.Missing = missing
	}
	return r
}

// Summary is one line for logs and svcctl.
func (r Report) Summary() string {
	ll := "none"
	if r.Landlock.ABI > 0 {
		ll = fmt.Sprintf("ABI %d", r.Landlock.ABI)
	}
	return fmt.Sprintf("cgroup %s [%s], landlock %s, no_new_privs, user %s, network %s, capabilities none, no terminal, daemon ports %s",
		r.Cgroup.Mode, strings.Join(r.Cgroup.Controllers, ","), ll, r.Identity.User, r.Network, r.Connect)
}

// Probe finds out what this host gives the sandbox configured by c,
// creating and removing a trial cgroup; it changes nothing else.
func Probe(c Config) Report {
	r := Report{Mode: c.Mode, Limits: c.Limits, MaxLimits: c.MaxLimits, NoNewPrivs: true, Network: c.Network}
	tree, problems := OpenTree(c.CgroupParent, os.Getpid(), c.WantsCPU())
	r.Cgroup.Mode = "none"
	if tree != nil {
		r.Cgroup = CgroupReport{Mode: tree.Mode(), Parent: parentOf(tree.Dir()), Controllers: tree.Controllers()}
		tree.Close()
		// A limit without its controller is skipped per command (the
		// command runs); required mode wants memory and pids whatever is
		// configured, as a request may set them.
		for _, l := range []struct {
			name string
			set  bool
		}{{"memory", c.Limits.MemoryBytes > 0 || c.MaxLimits.MemoryBytes > 0 || c.Mode == ModeRequired}, {"pids", c.Limits.Pids > 0 || c.MaxLimits.Pids > 0 || c.Mode == ModeRequired}, {"cpu", c.Limits.CPU > 0}} {
			if l.set && !contains(r.Cgroup.Controllers, l.name) {
				why := "enable it for svcd's delegated cgroup"
				if len(problems) > 0 {
					why = strings.Join(problems, "; ")
				}
				r.Missing = append(r.Missing, fmt.Sprintf("limits: no %s controller for the command cgroups (%s)", l.name, why))
			}
		}
	} else {
		r.Missing = append(r.Missing, fmt.Sprintf("cgroup: %s; commands are tracked by their process group only, which setsid escapes (run svcd under systemd with Delegate=yes, or set exec_cgroup_parent to a cgroup svcd may create children in)", strings.Join(problems, "; ")))
	}
	r.Landlock = LandlockReport{ABI: LandlockABI(), WriteRoots: c.WriteRoots, ReadRoots: c.ReadRoots}
	if r.Landlock.ABI == 0 {
		r.Missing = append(r.Missing, "landlock: this kernel has no Landlock, so exec_write_roots are not enforced (Linux 5.13+ with landlock in the lsm= boot parameter)")
	}
	if c.Network == NetworkNone {
		if err := probeNetns(); err != nil {
			r.Missing = append(r.Missing, fmt.Sprintf("network: cannot create a network namespace (%v); exec_network none needs root or unprivileged user namespaces", err))
		}
	}
	r.Identity = IdentityReport{User: c.User, Group: c.Group, UID: c.UID, GID: c.GID}
	if c.UID < 0 {
		r.Identity.UID = os.Geteuid()
		r.Identity.User = "(daemon's own)"
	}
	if c.GID < 0 {
		r.Identity.GID = os.Getegid()
	}
	if r.Identity.UID == 0 {
		r.Missing = append(r.Missing, "identity: commands run as root (set exec_user to an unprivileged user, e.g. useradd --system svcd-exec)")
	}
	r.strangerLayers(c)
	return r
}

// Err is the refusal of required mode: nil when nothing is missing.
func (r Report) Err() error {
	if len(r.Missing) == 0 {
		return nil
	}
	return fmt.Errorf("exec_sandbox is %q but the host lacks: %s", ModeRequired, strings.Join(r.Missing, " | "))
}

func parentOf(dir string) string {
	if i := strings.LastIndexByte(dir, '/'); i > 0 {
		return dir[:i]
	}
	return dir
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// probeNetns starts /bin/true in a new network namespace.
func probeNetns() error {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	return cmd.Run()
}
