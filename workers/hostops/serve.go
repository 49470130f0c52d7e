package hostops

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/svcd/svcd/workers/pluginkit"
)

// Serve is the body of `svcd worker hostops`. It reads Config from
// ConfigEnv, serves the plugin until the supervisor closes it, and kills the
// process group of every command still running on the way out.
//
// The supervisor starts this process with Pdeathsig SIGTERM, so when the
// supervisor dies (even by SIGKILL) the signal arrives here and the commands'
// groups are killed before the worker exits.
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
	spawner := pluginkit.NewSpawner()
	impl, err := NewLocal(cfg, log, spawner, os.Environ())
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-sigs
		n := impl.KillAll()
		log.Warn("stopping on signal; killed running commands", "signal", sig.String(), "commands", n)
		os.Exit(1)
	}()
	if os.Getppid() == 1 {
		// The supervisor died before Pdeathsig was armed.
		return fmt.Errorf("parent already gone")
	}
	pluginkit.Serve(Name, &Plugin{Impl: impl}, cfg.MaxMessage(pluginkit.MessageOverhead), log)
	if n := impl.KillAll(); n > 0 {
		log.Info("killed commands still running at shutdown", "commands", n)
	}
	return nil
}
