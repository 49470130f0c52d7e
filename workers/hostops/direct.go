package hostops

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Most commands are nothing but words: `ls -l /srv`, `git status`, `id -u`.
// For those, `/bin/sh -c command` searches PATH for the first word, forks,
// and runs that program with the words as its arguments, then reports its
// status. Starting a program is the expensive part of an exec (≈3 ms on the
// 2-core VM of docs/performance.md), and through the shell such a command
// is two program starts. So when the shell would do nothing but that, the
// worker runs the program itself, and gives the result the shell would have
// given: the same program, arguments, environment (the shell exports PWD),
// working directory, process group, cgroup, Landlock domain and limits, and
// the shell's way of reporting a program a signal ended (shellSignal; not a
// SIGKILL from outside, see Exec). Only where /bin/sh is dash, whose
// behaviour this follows (ShellIsDash).
// Anything else goes to the shell, as does a program that does not start
// (not found, not executable, a script without `#!`): the shell then says
// what went wrong in its own words. TestDirectMatchesTheShell runs both
// ways against the real /bin/sh.

// ShellIsDash: /bin/sh is dash, the shell whose builtins (shellWords),
// default path and way of reporting a signaled child this file follows
// (Debian's and Ubuntu's /bin/sh). With another shell every command goes
// through it.
func ShellIsDash() bool { return filepath.Base(ResolvedShell()) == "dash" }

// ResolvedShell is the file /bin/sh is ("" when it cannot be resolved).
func ResolvedShell() string {
	p, err := filepath.EvalSymlinks(Shell)
	if err != nil {
		return ""
	}
	return p
}

// shellDefaultPath is dash's search path when PATH is not set at all.
const shellDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// shellWords are the names the shell does not look up in PATH: its
// builtins (dash 0.5.12; `type NAME` says "shell builtin") and its reserved
// words. TestShellWordsAreTheShells checks the list against /bin/sh and
// every program on this machine's PATH.
var shellWords = map[string]bool{
	// builtins
	".": true, ":": true, "[": true, "alias": true, "bg": true, "break": true, "cd": true, "chdir": true,
	"command": true, "continue": true, "echo": true, "eval": true, "exec": true, "exit": true,
	"export": true, "false": true, "fg": true, "getopts": true, "hash": true, "jobs": true,
	"kill": true, "local": true, "printf": true, "pwd": true, "read": true, "readonly": true,
	"return": true, "set": true, "shift": true, "test": true, "times": true, "trap": true,
	"true": true, "type": true, "ulimit": true, "umask": true, "unalias": true, "unset": true, "wait": true,
	// reserved words
	"case": true, "do": true, "done": true, "elif": true, "else": true, "esac": true, "fi": true,
	"for": true, "if": true, "in": true, "then": true, "until": true, "while": true,
}

// sameAsUtility are the builtins that, given no arguments, do exactly what
// the utility of that name does: exit 0 or 1 and print nothing. POSIX runs
// a regular builtin only where the PATH search finds its utility (XCU
// 2.9.1.4), so running what the search found is what the builtin stands
// for. With arguments they differ (`true --help` prints coreutils' help).
var sameAsUtility = map[string]bool{"true": true, "false": true}

// plainWords splits command into its words when it is nothing but words
// the shell takes literally: ASCII letters, digits and `_-./,+:@%=`,
// separated by spaces or tabs. Every other byte (quotes, `$`, globs, `~`,
// `#`, operators, redirections, newlines, non-ASCII) means the shell has
// work to do. A first word with `=` may be an assignment, so it is the
// shell's too.
func plainWords(command string) ([]string, bool) {
	var words []string
	start := -1
	for i := 0; i < len(command); i++ {
		c := command[i]
		switch {
		case c == ' ' || c == '\t':
			if start >= 0 {
				words = append(words, command[start:i])
				start = -1
			}
			continue
		case literalByte(c):
		default:
			return nil, false
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		words = append(words, command[start:])
	}
	if len(words) == 0 || strings.ContainsRune(words[0], '=') {
		return nil, false
	}
	return words, true
}

func literalByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("_-./,+:@%=", c) >= 0
}

// program is what Exec starts: the shell with the command, or, when the
// shell would only have found and run one program, that program.
type program struct {
	path string
	args []string // argv, args[0] included
	// direct: path is the command's own program. env is the command's
	// environment with PWD as the shell would have exported it.
	direct bool
	env    []string
	// live is the config the command was planned under: spawning it reads
	// the same rlimits and environment even if a SIGHUP lands between.
	live *liveConfig
}

// shellProgram runs command through the shell.
func shellProgram(command string) program {
	return program{path: Shell, args: []string{Shell, "-c", command}}
}

// planExec decides how command runs in dir with environment env (see the
// top of this file); the shell unless every condition for running the
// program directly holds.
func planExec(command, dir string, env []string) program {
	words, ok := plainWords(command)
	if !ok || (shellWords[words[0]] && !(sameAsUtility[words[0]] && len(words) == 1)) {
		return shellProgram(command)
	}
	path, found := searchPath(words[0], dir, envValue(env, "PATH"))
	if !found {
		return shellProgram(command)
	}
	return program{path: path, args: words, direct: true, env: withEnv(env, "PWD", shellPWD(env, dir))}
}

// searchPath finds the file the shell would run for name, as the shell
// names it: a name with a slash as it is, else the first regular file named
// so in a PATH directory (an empty entry is dir itself); relative ones are
// relative to dir. Whether the file may be
// executed is left to execve, as the shell does. ok is false where the
// shell would search differently (dash's `%` entries) or finds nothing.
func searchPath(name, dir string, pathVar *string) (string, bool) {
	if strings.ContainsRune(name, '/') {
		return name, isRegular(inDir(dir, name))
	}
	search := shellDefaultPath
	if pathVar != nil {
		search = *pathVar
	}
	if strings.ContainsRune(search, '%') {
		return "", false
	}
	for _, entry := range strings.Split(search, ":") {
		// As the shell joins them: execve gets this string (a script's
		// interpreter sees it as $0), relative ones from dir.
		p := name
		if entry != "" {
			p = entry + "/" + name
		}
		if isRegular(inDir(dir, p)) {
			return p, true
		}
	}
	return "", false
}

func isRegular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func inDir(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// shellPWD is the PWD the shell exports to its children: the one it was
// given when that names dir, else dir's physical path (getcwd).
func shellPWD(env []string, dir string) string {
	if p := envValue(env, "PWD"); p != nil && filepath.IsAbs(*p) {
		if sameFile(*p, dir) {
			return *p
		}
	}
	if phys, err := filepath.EvalSymlinks(dir); err == nil {
		return phys
	}
	return dir
}

func sameFile(a, b string) bool {
	var sa, sb syscall.Stat_t
	return syscall.Stat(a, &sa) == nil && syscall.Stat(b, &sb) == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// envValue is the value of name in env (the last one, as os/exec keeps),
// nil when unset.
func envValue(env []string, name string) *string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return &v
		}
	}
	return nil
}

// withEnv is env with name set to value (a copy; env is shared).
func withEnv(env []string, name, value string) []string {
	return append(withoutEnv(env, name), name+"="+value)
}

// shellSignal reports a directly run program that a signal ended, and that
// the worker did not kill, as the shell does for its child: exit status
// 128+n and, except for SIGINT and SIGPIPE, the signal's description on
// stderr (glibc's strsignal, which dash prints, with " (core dumped)").
func shellSignal(ws syscall.WaitStatus) (exitCode int, note string) {
	sig := ws.Signal()
	exitCode = 128 + int(sig)
	if sig == syscall.SIGINT || sig == syscall.SIGPIPE {
		return exitCode, ""
	}
	note = signalDescription(sig)
	if ws.CoreDump() {
		note += " (core dumped)"
	}
	return exitCode, note + "\n"
}

// signalDescription is glibc's strsignal text: Go's names for 1–31 are the
// same words without the capital; above them glibc counts real-time
// signals from SIGRTMIN (34; 32 and 33 are glibc's own).
func signalDescription(sig syscall.Signal) string {
	switch {
	case sig >= 34:
		return "Real-time signal " + strconv.Itoa(int(sig)-34)
	case sig >= 32:
		return "Unknown signal " + strconv.Itoa(int(sig))
	}
	s := sig.String()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
