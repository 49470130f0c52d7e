package hostops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"

	"github.com/svcd/svcd/shared/reqid"
	"github.com/svcd/svcd/workers/hostops/sandbox"
	"github.com/svcd/svcd/workers/pluginkit"
)

// hopWorker is a real hostops worker process started through go-plugin as
// the worker manager starts it, with its exec hop attached.
type hopWorker struct {
	ops    *GRPCClient
	conn   *grpc.ClientConn
	client *plugin.Client
	pid    int
}

func startHopWorker(t testing.TB, env ...string) *hopWorker {
	t.Helper()
	maxMsg := DefaultConfig().MaxMessage(pluginkit.MessageOverhead)
	cfg := pluginkit.ClientConfig(pluginkit.ClientOptions{Name: Name, Plugin: &Plugin{}, MaxMsg: maxMsg, Logger: hclog.NewNullLogger()})
	parent, child, err := pluginkit.NewHopPair()
	if err != nil {
		t.Fatal(err)
	}
	cmd := hopChildCmd(t, "plugin", append(env, pluginkit.HopFDEnv+"="+pluginkit.HopFDValue(0))...)
	cmd.ExtraFiles = child
	cfg.Cmd = cmd
	client := plugin.NewClient(cfg)
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	for _, f := range child {
		f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rpc.Dispense(Name)
	if err != nil {
		t.Fatal(err)
	}
	ops := raw.(*GRPCClient)
	ops.AttachHop(parent, maxMsg)
	return &hopWorker{ops: ops, conn: rpc.(*plugin.GRPCClient).Conn, client: client, pid: cmd.Process.Pid}
}

// execCount reads the worker's own svcd_hostops_exec_total{outcome}.
func (w *hopWorker) execCount(t *testing.T, outcome string) float64 {
	t.Helper()
	mfs, err := pluginkit.GatherFrom(context.Background(), w.conn)
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "svcd_hostops_exec_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelIs(m, "outcome", outcome) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelIs(m *dto.Metric, name, value string) bool {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name && lp.GetValue() == value {
			return true
		}
	}
	return false
}

func TestHopExecResultsStartedAndMetrics(t *testing.T) {
	w := startHopWorker(t)
	var got []Started
	res, err := w.ops.Exec(context.Background(), ExecRequest{Command: "echo out; echo err >&2; exit 3", Timeout: 10 * time.Second}, func(st Started) { got = append(got, st) })
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.ErrorCode != CodeNonZeroExit || res.Pid <= 0 {
		t.Fatalf("result: %+v", res)
	}
	// A result needs no Started: the command is over (the worker's note of
	// it is read later, or when a call fails).
	if len(got) > 1 || (len(got) == 1 && got[0].Pid != res.Pid) {
		t.Fatalf("started %+v for pid %d", got, res.Pid)
	}
	if n := w.execCount(t, CodeNonZeroExit); n != 1 {
		t.Fatalf("the worker counted %v non_zero_exit execs, want 1", n)
	}
	// Calls share the one connection: 16 at once, each its own answer.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := w.ops.Exec(context.Background(), ExecRequest{Command: fmt.Sprintf("sleep 0.0%d; echo %d", i%10, i), Timeout: 10 * time.Second}, nil)
			if err != nil || !res.OK || string(res.Stdout) != fmt.Sprintf("%d\n", i) {
				errs <- fmt.Errorf("call %d: %+v %v", i, res, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := w.execCount(t, "ok"); n != 16 {
		t.Fatalf("the worker counted %v ok execs, want 16", n)
	}
}

// readPidFile waits until path holds want pids, one a line.
func readPidFile(t *testing.T, path string, want int) []int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
		if len(pids) >= want {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d pids of %d", path, len(pids), want)
		}
	}
}

func waitGone(t *testing.T, what string, pids ...int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		alive := 0
		for _, p := range pids {
			// A zombie is dead too: its parent (the killed worker) is gone
			// and init reaps it, but maybe not yet.
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p)); err == nil && !strings.Contains(string(b), ") Z ") {
				alive++
			}
		}
		if alive == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %v still running", what, alive, pids)
		}
	}
}

// The worker dies mid-call on the hop: the caller gets ErrHopClosed at once
// with what Started named, and killing that leaves nothing of the command
// (the background grandchild included, which the worker's Pdeathsig on the
// shell would not reach).
func TestHopWorkerKilledMidCall(t *testing.T) {
	// Started on the notes (the default), and on the stream (the notes
	// full or missing).
	t.Run("notes", func(t *testing.T) {
		dir := t.TempDir()
		hopWorkerKilledMidCall(t, startHopWorker(t, hopConfigWritable(t, dir)), dir)
	})
	t.Run("stream", func(t *testing.T) {
		dir := t.TempDir()
		hopWorkerKilledMidCall(t, startHopWorker(t, hopConfigWritable(t, dir), HopNotesOffEnv+"=1"), dir)
	})
}

// hopConfigWritable is the worker's config (ConfigEnv) with dir a write
// root besides its scratch dir: the tests' commands write their pids there
// while they run (the scratch dir is private to the command and emptied).
func hopConfigWritable(t *testing.T, dir string) string {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Sandbox.ScratchRoot = filepath.Join(t.TempDir(), "exec-scratch")
	cfg.Sandbox.WriteRoots = append(sandbox.WriteRootsFor(nil, nil, cfg.Sandbox.ScratchRoot), dir)
	enc, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return ConfigEnv + "=" + enc
}

// hopAnswer is how an exec made by execInBackground ended: what Started
// named, and the call's error.
type hopAnswer struct {
	st  Started
	err error
}

// execInBackground runs command on w's hop in its own goroutine (a minute
// at most) and sends how the call ended.
func (w *hopWorker) execInBackground(command string) <-chan hopAnswer {
	done := make(chan hopAnswer, 1)
	go func() {
		var st Started
		_, err := w.ops.Exec(context.Background(), ExecRequest{Command: command, Timeout: time.Minute}, func(s Started) { st = s })
		done <- hopAnswer{st, err}
	}()
	return done
}

func hopWorkerKilledMidCall(t *testing.T, w *hopWorker, dir string) {
	pidFile := filepath.Join(dir, "pids")
	done := w.execInBackground(fmt.Sprintf("sleep 300 & echo $! > %s; echo $$ >> %s; sleep 300", pidFile, pidFile))
	pids := readPidFile(t, pidFile, 2)
	// The worker sends Started after the fork returns, on its own
	// schedule: on a loaded machine the shell can write its pids first.
	// Killing the worker in that window leaves the supervisor nothing to
	// kill by (the window is the design's, on gRPC too), so give it time.
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Kill(w.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var a hopAnswer
	select {
	case a = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end after its worker was killed")
	}
	if !errors.Is(a.err, ErrHopClosed) || errors.Is(a.err, ErrCancelSent) || a.st.Pid != pids[1] {
		t.Fatalf("call on the killed worker: started %+v (shell %d), error %v", a.st, pids[1], a.err)
	}
	a.st.Kill() // what the supervisor does with it
	waitGone(t, "the command of the killed worker", pids...)
}

// A caller that goes away cancels the call over the hop (or, on a worker
// without one, over gRPC): the worker kills the command and stays up for the
// next one.
func TestHopCancelKillsCommand(t *testing.T) {
	t.Run("hop", func(t *testing.T) { cancelKillsCommand(t, false) })
	t.Run("grpc", func(t *testing.T) { cancelKillsCommand(t, true) })
}

func cancelKillsCommand(t *testing.T, overGRPC bool) {
	dir := t.TempDir()
	w := startHopWorker(t, hopConfigWritable(t, dir))
	if overGRPC {
		w.ops.hop = nil // the client of a worker started without a hop
	}
	pidFile := filepath.Join(dir, "pids")
	ctx, cancel := context.WithCancel(reqid.With(context.Background(), "hop-cancel-1"))
	done := make(chan error, 1)
	go func() {
		_, err := w.ops.Exec(ctx, ExecRequest{Command: fmt.Sprintf("sleep 300 & echo $! > %s; echo $$ >> %s; sleep 300", pidFile, pidFile), Timeout: time.Minute}, nil)
		done <- err
	}()
	pids := readPidFile(t, pidFile, 2)
	cancel()
	// ErrCancelSent: the worker got the cancel and ends the command itself,
	// so the supervisor does not kill its cgroup by path (they are reused).
	// Nobody else kills here: the command must die of the worker's kill.
	if err := <-done; !errors.Is(err, ErrCancelSent) || !overGRPC && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	waitGone(t, "the cancelled command", pids...)
	res, err := w.ops.Exec(context.Background(), ExecRequest{Command: "echo next", Timeout: 10 * time.Second}, nil)
	if err != nil || string(res.Stdout) != "next\n" {
		t.Fatalf("next exec: %+v %v", res, err)
	}
	for deadline := time.Now().Add(5 * time.Second); w.execCount(t, CodeCanceled) != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker counted %v canceled execs, want 1", w.execCount(t, CodeCanceled))
		}
	}
}

// A worker that stops reading its hop (SIGSTOP here; wedged alike) cannot
// hold callers: the write that finds the socket full times out, the hop
// closes, the call waiting for a result ends with what Started named, and
// later calls fail at once instead of waiting behind the write lock or
// falling back to gRPC on the same stopped worker.
func TestHopWorkerStoppedWriteTimesOut(t *testing.T) {
	dir := t.TempDir()
	w := startHopWorker(t, hopConfigWritable(t, dir))
	w.ops.hop.writeTimeout = 300 * time.Millisecond
	pidFile := filepath.Join(dir, "pids")
	waiting := w.execInBackground(fmt.Sprintf("echo $$ > %s; sleep 300", pidFile))
	pids := readPidFile(t, pidFile, 1)
	time.Sleep(300 * time.Millisecond) // Started reaches the notes (see hopWorkerKilledMidCall)
	if err := syscall.Kill(w.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(w.pid, syscall.SIGCONT) })

	// One frame larger than the socket's buffer: it cannot all be written
	// while the worker does not read.
	big := "true #" + strings.Repeat("x", 1<<20)
	call := func(command string) error {
		done := make(chan error, 1)
		go func() {
			_, err := w.ops.Exec(context.Background(), ExecRequest{Command: command, Timeout: time.Minute}, nil)
			done <- err
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("an exec on a stopped worker did not end")
			return nil
		}
	}
	if err := call(big); !errors.Is(err, ErrHopStuck) {
		t.Fatalf("the write to a stopped worker: %v, want ErrHopStuck", err)
	}
	var a hopAnswer
	select {
	case a = <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the call waiting on the stopped worker did not end when its hop closed")
	}
	if !errors.Is(a.err, ErrHopClosed) || !errors.Is(a.err, ErrHopStuck) || a.st.Pid != pids[0] {
		t.Fatalf("call waiting on the stopped worker: started %+v (shell %d), error %v", a.st, pids[0], a.err)
	}
	a.st.Kill() // what the supervisor does with it
	waitGone(t, "the command of the stopped worker", pids...)
	if err := call("true"); !errors.Is(err, ErrHopStuck) {
		t.Fatalf("an exec after the hop closed: %v, want ErrHopStuck", err)
	}
}
