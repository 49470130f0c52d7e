package hostops

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/svcd/svcd/workers/hostops/sandbox"
)

// The worker confines itself at start: Landlock lets it write only where
// the file routes and the commands may (hostops_allowed_roots, the exec
// write roots and scratch root) and where the sandbox must (its cgroup
// directories), so a bug in the path checks of paths.go cannot write
// elsewhere. Landlock restricts the calling thread and what it creates, and
// the Go runtime has threads running long before Serve; so the main thread
// restricts itself and re-executes the worker, whose every thread then
// descends from the restricted one. That costs one program start per
// worker start, never per command.

// confinedEnv marks the re-executed, confined worker.
const confinedEnv = "SVCD_HOSTOPS_CONFINED"

// The worker manager starts the worker with a parent-death signal
// (SIGTERM), but the re-execution runs on the locked thread above, which is
// not always the main one, and a thread other than the main one has no
// parent-death signal of its own: execve from it made the worker deaf to
// its supervisor's death (a confined worker outlived a SIGKILLed
// supervisor). The confined run sets it again. Package initialisation runs
// on the main thread (runtime.main locks it there), the one the signal
// belongs to; Serve then checks the parent did not die before this.
func init() {
	if os.Getenv(confinedEnv) != "" {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0)
	}
}

// confineSelf restricts the worker and re-executes it; it returns only
// when that is not needed (nil) or failed (the error). The second run
// finds confinedEnv set and returns nil at once.
func confineSelf(cfg Config) error {
	if os.Getenv(confinedEnv) != "" || !cfg.confinable() {
		return nil
	}
	abi := sandbox.LandlockABI()
	if abi == 0 {
		return fmt.Errorf("the kernel has no Landlock")
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// go-plugin creates the worker's socket in PLUGIN_UNIX_SOCKET_DIR (or
	// the temporary directory): give it a directory the worker may write.
	sockDir := filepath.Join(filepath.Dir(cfg.Sandbox.ScratchRoot), "hostops-run")
	if len(sockDir) > 80 { // sun_path holds 108 bytes, the file name ~20
		if sockDir, err = os.MkdirTemp("", "svcd-hostops-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(sockDir, 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Sandbox.ScratchRoot, 0o711); err != nil {
		return err
	}
	write := append(append(append([]string{}, cfg.AllowedRoots...), cfg.Sandbox.WriteRoots...), cfg.Sandbox.ScratchRoot, sockDir)
	cg, files := sandbox.CgroupWritePaths(cfg.Sandbox.CgroupParent)
	write = append(write, cg...)
	runtime.LockOSThread() // never unlocked: this thread execs or the worker exits
	if _, err := sandbox.RestrictThread(sandbox.Ruleset{Write: write, WriteFiles: append(files, sandbox.DeviceFiles...)}, abi); err != nil {
		return err
	}
	env := append(os.Environ(), confinedEnv+"=1", "PLUGIN_UNIX_SOCKET_DIR="+sockDir)
	return syscall.Exec(exe, os.Args, env)
}

// confinable: there are roots to confine the worker to, and the commands'
// write roots do not already include everything.
func (c Config) confinable() bool {
	if len(c.AllowedRoots) == 0 || c.Sandbox.Mode == sandbox.ModeOff || c.Sandbox.ScratchRoot == "" {
		return false
	}
	for _, r := range c.Sandbox.WriteRoots {
		if filepath.Clean(r) == "/" {
			return false
		}
	}
	return true
}
