// Package deploy_test checks the shipped service units and config examples:
// systemd-analyze verify and security (--offline) on every unit, the config
// examples load through the daemon's own config loader, and each unit's
// ExecStart names a real subcommand of the built binary.
package deploy_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/svcd/svcd/e2e/harness"
	"github.com/svcd/svcd/supervisor/config"
)

// Exposure goals of issue 21, as systemd-analyze's --threshold (exposure x 10).
var units = []struct {
	file      string
	threshold int
	dropIn    string // a drop-in merged into the unit for a variant
}{
	{"svcd.service", 30, ""},
	// Root with exec_user / exec_network: 3.6 since the unit cannot restrict
	// namespaces (any RestrictNamespaces= blocks the sandbox's clone3, issue
	// 31): the namespace items count more for root.
	{"svcd.service", 36, "svcd-root-sandbox.conf"},
	{"svcd-status.service", 20, ""},
	{"svcd-witness.service", 20, ""},
}

const installedBinary = "/usr/local/bin/svcd"

func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze not found; CI installs Debian's systemd package (.ci/run)")
		}
		t.Skip("systemd-analyze not found (Debian: apt-get install systemd)")
	}
	return p
}

// unitCopy writes the unit (with its drop-in's [Service] section appended,
// which is how systemd applies a drop-in) into a temp dir, with ExecStart
// pointing at the freshly built binary: verify checks that the command
// exists and is executable, and /usr/local/bin/svcd is not installed here.
func unitCopy(t *testing.T, file, dropIn, bin string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("systemd", file))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if !strings.Contains(text, "ExecStart="+installedBinary+" ") {
		t.Fatalf("%s: ExecStart does not run %s", file, installedBinary)
	}
	text = strings.ReplaceAll(text, installedBinary, bin)
	if dropIn != "" {
		d, err := os.ReadFile(filepath.Join("systemd", dropIn))
		if err != nil {
			t.Fatal(err)
		}
		_, section, ok := strings.Cut(string(d), "[Service]")
		if !ok {
			t.Fatalf("%s has no [Service] section", dropIn)
		}
		text += "\n[Service]" + section
	}
	path := filepath.Join(t.TempDir(), file)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var exposureRE = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

func TestUnitsVerifyAndMeetTheirExposureGoal(t *testing.T) {
	analyze := systemdAnalyze(t)
	bin := harness.Binary(t)
	for _, u := range units {
		name := u.file
		if u.dropIn != "" {
			name += "+" + u.dropIn
		}
		t.Run(name, func(t *testing.T) {
			path := unitCopy(t, u.file, u.dropIn, bin)
			// verify exits 0 on unknown keys and misplaced sections (it only
			// warns): any output is a finding.
			out, err := exec.Command(analyze, "verify", path).CombinedOutput()
			if err != nil || len(strings.TrimSpace(string(out))) > 0 {
				t.Fatalf("systemd-analyze verify %s: %v\n%s", name, err, out)
			}
			out, err = exec.Command(analyze, "security", "--offline=yes", "--threshold="+itoa(u.threshold), path).CombinedOutput()
			m := exposureRE.FindSubmatch(out)
			if m == nil {
				t.Fatalf("systemd-analyze security printed no exposure level:\n%s", out)
			}
			if err != nil {
				t.Fatalf("%s: exposure %s is above the goal %.1f\n%s", name, m[1], float64(u.threshold)/10, out)
			}
			t.Logf("%s: exposure %s (goal <= %.1f)", name, m[1], float64(u.threshold)/10)
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// directive returns the values of key= in a unit file.
func directive(t *testing.T, file, key string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("systemd", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vals []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+"="); ok {
			vals = append(vals, v)
		}
	}
	return vals
}

// TestConfigExamplesLoadAndMatchTheUnits: every unit's ExecStart runs a real
// subcommand with a -config example that the daemon's loader accepts
// together with the unit's env file example, and the data_dir / log_file of
// the example are inside the directories the unit makes writable.
func TestConfigExamplesLoadAndMatchTheUnits(t *testing.T) {
	bin := harness.Binary(t)
	for _, unit := range []string{"svcd.service", "svcd-status.service", "svcd-witness.service"} {
		t.Run(unit, func(t *testing.T) {
			start := directive(t, unit, "ExecStart")
			if len(start) != 1 {
				t.Fatalf("ExecStart = %v", start)
			}
			argv := strings.Fields(start[0])
			if len(argv) != 4 || argv[2] != "-config" {
				t.Fatalf("ExecStart %q: want BINARY SUBCOMMAND -config FILE", start[0])
			}
			// The subcommand exists and takes -config (-h exits 0 listing flags).
			out, err := exec.Command(bin, argv[1], "-h").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "-config") {
				t.Fatalf("svcd %s -h: %v\n%s", argv[1], err, out)
			}
			hcl := filepath.Join("config", filepath.Base(argv[3]))
			envFiles := directive(t, unit, "EnvironmentFile")
			if len(envFiles) != 1 {
				t.Fatalf("EnvironmentFile = %v", envFiles)
			}
			env := readEnvFile(t, filepath.Join("config", filepath.Base(strings.TrimPrefix(envFiles[0], "-"))))
			cfg, err := config.Load("svcd "+argv[1], []string{"-config", hcl}, func(k string) string { return env[k] })
			if err != nil {
				t.Fatalf("%s with %s: %v", hcl, envFiles[0], err)
			}
			writable := map[string]bool{}
			for _, d := range directive(t, unit, "StateDirectory") {
				writable["/var/lib/"+d] = true
			}
			for _, d := range directive(t, unit, "LogsDirectory") {
				writable["/var/log/"+d] = true
			}
			if unit != "svcd-status.service" && !writable[cfg.DataDir] {
				t.Errorf("data_dir %s is not the unit's StateDirectory (%v)", cfg.DataDir, writable)
			}
			if cfg.LogFile != "" && !writable[filepath.Dir(cfg.LogFile)] {
				t.Errorf("log_file %s is not in the unit's LogsDirectory (%v)", cfg.LogFile, writable)
			}
			if unit == "svcd-witness.service" && cfg.SharedToken == "" {
				t.Error("the witness env example sets no SVC_SHARED_TOKEN; the witness refuses to start without one")
			}
		})
	}
}

func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(k, "SVC_") {
			t.Fatalf("%s: %q is not an SVC_* assignment", path, line)
		}
		env[k] = v
	}
	return env
}

// TestMain removes the svcd binary the harness built once the tests are done.
func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
