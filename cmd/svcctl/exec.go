package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
)

// Exit codes of svcctl exec besides the command's own (documented in
// execHelp and README).
const (
	exitTimedOut = 124 // the daemon's timeout killed the command, as timeout(1)
	exitNoRun    = 125 // svcctl or the daemon could not run it (token, daemon down, bad cwd)
)

const execHelp = `usage: svcctl exec [flags] -- CMD ARGS...
       svcctl exec [flags] -sh 'SHELL COMMAND'

Runs a command on the daemon's host (needs the shared token). With -- the
arguments are run exactly as given: each is quoted for /bin/sh, so spaces,
quotes and $ reach the command unchanged. With -sh the string is run by
/bin/sh -c, pipes and expansions included.

The command's stdout is svcctl's stdout and its stderr svcctl's stderr, byte
for byte. svcctl says on stderr when the daemon cut an output at its cap
(exec_output_cap_bytes) or the call timed out, and exits with the command's
exit code: 128+N when signal N killed it, 124 when the timeout did,
125 when it could not be run (no or wrong token, daemon down, bad -cwd).
-format=json prints the daemon's JSON envelope instead (same exit codes).

examples:
  svcctl exec -- ls -la /tmp
  svcctl exec -cwd /srv -timeout-ms 5000 -- sh -c 'make build'
  svcctl exec -sh 'ps aux | grep svcd'

flags:`

// runExec is svcctl exec (execHelp).
func runExec(ctx context.Context, c *client, args []string) error {
	fs := c.flags("exec", execHelp)
	cwd := fs.String("cwd", "", "working directory on the host (default: the daemon's)")
	timeout := fs.Int64("timeout-ms", 0, "timeout in milliseconds; the process group is killed after it (default: the daemon's, 30000)")
	shell := fs.String("sh", "", "a shell command string, run by /bin/sh -c (instead of -- CMD ARGS...)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	var command string
	switch {
	case *shell != "" && fs.NArg() > 0:
		return usageError("exec: give -sh 'STRING' or -- CMD ARGS..., not both")
	case *shell != "":
		command = *shell
	case fs.NArg() > 0:
		command = shellJoin(fs.Args())
	default:
		return usageError("usage: svcctl exec [-cwd DIR] [-timeout-ms N] -- CMD ARGS... | -sh 'SHELL COMMAND'  (svcctl exec -h)")
	}
	body := map[string]any{"command": command}
	if *cwd != "" {
		body["cwd"] = *cwd
	}
	if *timeout != 0 {
		body["timeoutMs"] = *timeout
	}
	raw, resp, err := c.send(ctx, http.MethodPost, "/v1/exec", body, true)
	if err == nil && resp.StatusCode/100 != 2 {
		err = c.failure(http.MethodPost, "/v1/exec", resp, raw)
	}
	if err != nil {
		fmt.Fprintf(c.errOut, "svcctl exec: %v\n", err)
		return exitError(exitNoRun)
	}
	if c.format == formatJSON {
		c.print(raw)
	}
	return c.execOutcome(raw)
}

// execAnswer is data of POST /v1/exec (SPEC.md).
type execAnswer struct {
	Data struct {
		OK     bool   `json:"ok"`
		Error  string `json:"error"`
		Code   string `json:"code"`
		Result struct {
			Stdout          string  `json:"stdout"`
			Stderr          string  `json:"stderr"`
			StdoutBase64    string  `json:"stdoutBase64"`
			StderrBase64    string  `json:"stderrBase64"`
			ExitCode        int     `json:"exitCode"`
			Signal          *string `json:"signal"`
			DurationMs      int64   `json:"durationMs"`
			TimedOut        bool    `json:"timedOut"`
			StdoutTruncated bool    `json:"stdoutTruncated"`
			StderrTruncated bool    `json:"stderrTruncated"`
		} `json:"result"`
	} `json:"data"`
}

// execOutcome writes the command's output (human format) and notes, and
// turns its end into svcctl's exit code.
func (c *client) execOutcome(raw []byte) error {
	var a execAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		fmt.Fprintf(c.errOut, "svcctl exec: the daemon's answer is not the exec envelope: %v\n", err)
		return exitError(exitNoRun)
	}
	r := a.Data.Result
	if c.format != formatJSON {
		// The daemon sends base64 when the text form would lose bytes
		// (invalid UTF-8, or a cut inside a character).
		_, _ = c.out.Write(outputBytes(r.Stdout, r.StdoutBase64))
		_, _ = c.errOut.Write(outputBytes(r.Stderr, r.StderrBase64))
	}
	for _, s := range []struct {
		name string
		cut  bool
	}{{"stdout", r.StdoutTruncated}, {"stderr", r.StderrTruncated}} {
		if s.cut {
			fmt.Fprintf(c.errOut, "svcctl exec: %s was truncated at the daemon's cap (exec_output_cap_bytes)\n", s.name)
		}
	}
	switch {
	case a.Data.OK:
		return nil
	case r.TimedOut:
		fmt.Fprintf(c.errOut, "svcctl exec: timed out after %d ms; the daemon killed the process group (exit %d)\n", r.DurationMs, exitTimedOut)
		return exitError(exitTimedOut)
	case r.Signal != nil:
		n := int(unix.SignalNum(*r.Signal))
		if n == 0 {
			n = 9 // a name this build does not know: report it as a kill
		}
		fmt.Fprintf(c.errOut, "svcctl exec: killed by %s\n", *r.Signal)
		return exitError(128 + n)
	case r.ExitCode > 0:
		return exitError(r.ExitCode)
	}
	msg := a.Data.Error
	if msg == "" {
		msg = "the command did not run (data.ok is false)"
	}
	if a.Data.Code != "" {
		msg = a.Data.Code + ": " + msg
	}
	fmt.Fprintf(c.errOut, "svcctl exec: %s\n", msg)
	return exitError(exitNoRun)
}

func outputBytes(text, b64 string) []byte {
	if b64 != "" {
		if b, err := base64.StdEncoding.DecodeString(b64); err == nil {
			return b
		}
	}
	return []byte(text)
}

// plainWord is an argument /bin/sh reads as itself without quotes.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellJoin quotes each argument for POSIX sh and joins them, so the
// daemon's /bin/sh -c runs exactly this argv: single quotes keep every byte
// but ' itself, which is closed, escaped and reopened ('it'\”s').
func shellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

func shellQuote(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
