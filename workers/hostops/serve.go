package hostops

import (
	"fmt"
	"os"
	"runtime"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/svcd/svcd/workers/hostops/sandbox"
	"github.com/svcd/svcd/workers/pluginkit"
)

// Serve is the body of `svcd worker hostops`. It reads Config from
// ConfigEnv, serves the plugin until the supervisor closes it, and kills the
// process group of every command still running on the way out.
//
// The supervisor starts this process with Pdeathsig SIGTERM, so when the
// supervisor dies (even by SIGKILL) the signal arrives here and
// pluginkit.Serve kills the commands' groups before the worker exits.
func Serve(log hclog.Logger) error {
	cfg, err := DecodeConfig(os.Getenv(ConfigEnv))
	if err != nil {
		return err
	}
	if cfg.SelfExecutable == "" {
		if exe, err := os.Executable(); err == nil {
			cfg.SelfExecutable = exe
		}
	}
	if err := confineSelf(cfg); err != nil {
		if cfg.Sandbox.Mode == sandbox.ModeRequired {
			return fmt.Errorf("confine the hostops worker to its roots: %w", err)
		}
		log.Warn("the hostops worker is not confined to its roots by Landlock", "error", err)
	} else if os.Getenv(confinedEnv) != "" {
		log.Debug("hostops worker confined by Landlock to its write roots")
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	// No thread is woken by a command's exit (childsignal.go).
	if _, err := quietChildExits(); err != nil {
		log.Warn("SIGCHLD stays with Go's handler; each command's exit wakes a worker thread", "error", err)
	}
	// Before NewLocal reads the environment the commands get: TakeHop
	// removes the descriptor's variable.
	hop, err := pluginkit.TakeHop()
	if err != nil {
		log.Warn("no exec hop; exec goes over gRPC", "error", err)
	}
	spawner := pluginkit.NewSpawner()
	impl, err := NewLocal(cfg, log, spawner, os.Environ())
	if err != nil {
		return err
	}
	// On SIGTERM and on a normal stop alike, no command outlives the worker.
	killAll := func() {
		if n := impl.KillAll(); n > 0 {
			log.Warn("killed commands still running at worker stop", "commands", n)
		}
	}
	// Then the command cgroups and the worker's own cgroup directories go.
	tel := pluginkit.NewTelemetry()
	metered := Metered(impl, tel.Registry)
	if hop != nil {
		if os.Getenv(HopNotesOffEnv) != "" && hop.Notes >= 0 {
			unix.Close(hop.Notes)
			hop.Notes = -1
		}
		go serveHop(hop, metered, cfg.MaxMessage(pluginkit.MessageOverhead), log)
	}
	pluginkit.Serve(Name, &Plugin{Impl: metered}, cfg.MaxMessage(pluginkit.MessageOverhead), log, tel, killAll, impl.Close)
	return nil
}
