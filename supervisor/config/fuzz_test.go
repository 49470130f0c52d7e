package config

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary config files and one environment variable through
// Load's steps, the daemon's first parser of operator input. Whatever
// arrives must not panic and must be answered the same way twice (the same
// error text, or the same configuration); a refused file is named in the
// error, so the operator knows which one.
func FuzzLoad(f *testing.F) {
	f.Add("listen = \"127.0.0.1:5000\"\n", "SVC_LOG_LEVEL", "debug")
	f.Add("allowed_hosts = [\"svc.local\"]\nmax_body_bytes = 2048\n", "SVC_MAX_BODY_BYTES", "-1")
	f.Add("renewal_tick_ms = 0\n", "SVC_AGENTD_SPAWN", "maybe")
	f.Add("join = [\"127.0.0.1:1\"]\nbootstrap = false\n", "SVC_ALLOWED_ORIGINS", "chrome-extension://x,http://[::1]:1")
	f.Add("listen = ", "SVC_LISTEN", "nohost")
	f.Add("exec_rlimits = { nofile = 64 }\n", "SVC_EXEC_RLIMITS", "nofile=abc")
	f.Add("unknown_key = 1\n", "", "")
	names := map[string]bool{}
	for _, v := range envVars() {
		names[v.name] = true
	}
	f.Fuzz(func(t *testing.T, file, envName, envValue string) {
		const path = "/etc/svcd/svcd.hcl" // named in errors; never opened
		env := map[string]string{}
		if names[envName] {
			env[envName] = envValue
		}
		// Load's order without the disk: defaults, file, environment, checks.
		load := func() (Config, error) {
			c := Defaults()
			if err := decodeFile([]byte(file), path, &c); err != nil {
				return c, err
			}
			if err := applyEnv(&c, envOf(env)); err != nil {
				return c, err
			}
			return c, c.Validate()
		}
		c1, err1 := load()
		c2, err2 := load()
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("two loads disagree: %v / %v", err1, err2)
		}
		if err1 != nil {
			if strings.HasPrefix(err1.Error(), "config file") && !strings.Contains(err1.Error(), path) {
				t.Fatalf("a refused file is not named: %v", err1)
			}
			return
		}
		if !reflect.DeepEqual(c1, c2) {
			t.Fatalf("two loads of the same input differ")
		}
	})
}
