package hostops

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/workers/pluginkit"
)

// Local is the real HostOps, running in the worker process.
type Local struct {
	// live is what Reconfigure swaps (reconfigure.go): each operation
	// reads it when it needs it, so a SIGHUP reaches new operations and a
	// running command keeps the cgroup, rlimits and spawner it started with.
	live     atomic.Pointer[liveConfig]
	reconfMu sync.Mutex // one Reconfigure at a time
	environ  []string   // the worker's environment, for exec_env_allow
	started  Config     // the config at start: what a confined worker may reach
	log      hclog.Logger
	spawner  *pluginkit.Spawner
	groups   *groups
	devNull  *os.File   // every command's stdin, opened once
	readBufs *sync.Pool // output drain buffers
	pidfd    bool       // commands are waited for through a pidfd (exitwait.go)
	// shellIsDash: commands of plain words may run without the shell
	// (direct.go).
	shellIsDash bool
	sandbox     *cmdSandbox
}

var _ HostOps = (*Local)(nil)

// NewLocal builds the implementation. environ is the worker's environment
// (os.Environ()); the children's one is derived from it once, here.
func NewLocal(cfg Config, log hclog.Logger, spawner *pluginkit.Spawner, environ []string) (*Local, error) {
	live, err := newLiveConfig(cfg, environ)
	if err != nil {
		return nil, err
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	l := &Local{started: cfg, environ: environ, log: log, spawner: spawner, groups: newGroups(), devNull: devNull, readBufs: newReadBufs(), pidfd: pidfdWaitable(), shellIsDash: ShellIsDash()}
	box, err := setupSandbox(context.Background(), cfg.Sandbox, spawner.Do)
	if err != nil {
		return nil, err
	}
	for _, p := range box.problems {
		log.Warn("exec sandbox layer missing", "layer", p)
	}
	l.sandbox = box
	live.noTrace = l.tracingRefused(cfg.Rlimits)
	l.live.Store(live)
	return l, nil
}

// KillAll kills the process group of every running command.
func (l *Local) KillAll() int {
	if l.sandbox != nil {
		l.sandbox.killedAll.Store(true)
	}
	return l.groups.killAll()
}

// Close waits for command cgroups to be removed and removes the worker's
// cgroup directories; call after KillAll.
func (l *Local) Close() { l.sandbox.close() }

// childEnv is the environment of exec children. Internal variables (the
// plugin handshake, the client certificate, worker config) and the shared
// token never pass. With an allow-list only the listed names pass.
func childEnv(environ, allow []string) []string {
	allowed := map[string]bool{}
	for _, n := range allow {
		allowed[n] = true
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if internalEnv(name) {
			continue
		}
		if len(allowed) > 0 && !allowed[name] {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// withoutEnv is a copy of env without name (with room for one more).
func withoutEnv(env []string, name string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func internalEnv(name string) bool {
	return name == "SVC_SHARED_TOKEN" ||
		name == pluginkit.Handshake().MagicCookieKey ||
		strings.HasPrefix(name, "PLUGIN_") ||
		strings.HasPrefix(name, "SVCD_")
}
