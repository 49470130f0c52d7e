package reload

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// Run calls every reloader in order, keeps going past a failure, and logs
// one line naming what was reloaded, what failed and what needs a restart.
func TestRunReportsReloadedFailedAndRestartNeeded(t *testing.T) {
	var out bytes.Buffer
	var order []string
	s := &Set{}
	s.SetLogger(hclog.New(&hclog.LoggerOptions{Output: &out, JSONFormat: true}))
	s.Add(Func{N: "log_file", F: func() error { order = append(order, "log_file"); return nil }})
	s.Add(Func{N: "tls", F: func() error { order = append(order, "tls"); return errors.New("bad pem") }})
	s.Add(Func{N: "config", F: func() error {
		order = append(order, "config")
		return &RestartNeeded{Keys: []string{"listen"}}
	}})
	res := s.Run()
	if strings.Join(order, ",") != "log_file,tls,config" {
		t.Fatalf("order = %v", order)
	}
	if strings.Join(res.Reloaded, ",") != "log_file,config" || res.Failed["tls"] != "bad pem" || strings.Join(res.NeedsRestart, ",") != "listen" {
		t.Fatalf("result = %+v", res)
	}
	line := out.String()
	for _, want := range []string{`"@level":"warn"`, `"reloaded":["log_file","config"]`, `"needs_restart":["listen"]`, `"tls":"bad pem"`} {
		if !strings.Contains(line, want) {
			t.Errorf("log line lacks %s: %s", want, line)
		}
	}
}

func TestFromContext(t *testing.T) {
	s := &Set{}
	if From(WithSet(context.Background(), s)) != s {
		t.Fatal("From did not return the Set WithSet stored")
	}
	if From(context.Background()) == nil {
		t.Fatal("From without a Set returned nil")
	}
}

// A reloader that applied settings names them (Applied) and counts as
// reloaded; keys claimed by one reloader are Claimed for the others.
func TestAppliedKeysAndClaims(t *testing.T) {
	var out bytes.Buffer
	s := &Set{}
	s.SetLogger(hclog.New(&hclog.LoggerOptions{Output: &out, JSONFormat: true}))
	s.Claim("exec_limits", "exec_write_roots")
	if !s.Claimed("exec_limits") || s.Claimed("listen") {
		t.Fatalf("claims: exec_limits %v, listen %v", s.Claimed("exec_limits"), s.Claimed("listen"))
	}
	s.Add(Func{N: "exec", F: func() error { return &Applied{Keys: []string{"exec_limits"}} }})
	res := s.Run()
	if strings.Join(res.Reloaded, ",") != "exec" || strings.Join(res.Applied, ",") != "exec_limits" || len(res.Failed) != 0 {
		t.Fatalf("result = %+v", res)
	}
	for _, want := range []string{`"@level":"info"`, `"applied":["exec_limits"]`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("log line lacks %s: %s", want, out.String())
		}
	}
}

// Two reloaders of one SIGHUP that read the config share one read, and the
// next SIGHUP reads it again; a broken edit is reported by each reloader
// from the one read, not parsed twice.
func TestOncePerRunSharesOneReadPerSIGHUP(t *testing.T) {
	s := &Set{}
	reads := 0
	load := OncePerRun(s, func() (int, error) {
		reads++
		if reads == 2 {
			return 0, errors.New("line 3: bad value")
		}
		return reads, nil
	})
	if v, _ := load(); v != 1 || reads != 1 {
		t.Fatalf("before any SIGHUP: got %d after %d reads, want a fresh read", v, reads)
	}
	var got []string
	use := Func{N: "x", F: func() error {
		_, err := load()
		if err != nil {
			got = append(got, err.Error())
		}
		return err
	}}
	s.Add(use)
	s.Add(Func{N: "y", F: use.F})
	res := s.Run()
	if reads != 2 || len(got) != 2 || len(res.Failed) != 2 {
		t.Fatalf("one SIGHUP: %d reads (want 2: one at start, one for the run), errors %v, failed %v", reads, got, res.Failed)
	}
	s.Run()
	if reads != 3 {
		t.Fatalf("a second SIGHUP read the config %d times in all, want 3", reads)
	}
}
