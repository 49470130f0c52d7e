package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLayeringDefaultsFileEnvFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "svcd.hcl")
	err := os.WriteFile(file, []byte(`
listen        = "127.0.0.1:5000"
data_dir      = "/from/file"
log_level     = "debug"
allowed_hosts = ["svc.local"]
max_body_bytes = 2048
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}

	// Defaults only.
	c, err := Load("t", nil, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:4317" || c.DataDir != "./data" || !c.Bootstrap || c.MaxBodyBytes != 1<<20 {
		t.Fatalf("defaults = %+v", c)
	}

	// File over defaults; untouched keys keep their defaults.
	c, err = Load("t", []string{"-config", file}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:5000" || c.DataDir != "/from/file" || c.LogLevel != "debug" || c.MaxBodyBytes != 2048 || c.NodeID != "node1" {
		t.Fatalf("file layer = %+v", c)
	}
	if len(c.AllowedHosts) != 1 || c.AllowedHosts[0] != "svc.local" {
		t.Fatalf("allowed hosts = %v", c.AllowedHosts)
	}

	// Env over file, flags over env.
	env := envOf(map[string]string{"SVC_DATA_DIR": "/from/env", "SVC_LISTEN": "127.0.0.1:6000", "SVC_SHARED_TOKEN": "s3cret"})
	c, err = Load("t", []string{"-config", file, "-listen", "127.0.0.1:7000"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "/from/env" || c.Listen != "127.0.0.1:7000" || c.SharedToken != "s3cret" || c.LogLevel != "debug" {
		t.Fatalf("env+flags = %+v", c)
	}

	// SVC_CONFIG names the file when -config is absent.
	c, err = Load("t", nil, envOf(map[string]string{"SVC_CONFIG": file}))
	if err != nil || c.DataDir != "/from/file" {
		t.Fatalf("SVC_CONFIG: %+v %v", c, err)
	}
}

func TestBadConfigIsRefusedClearly(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.hcl")
	_ = os.WriteFile(bad, []byte(`listen = `), 0o600)
	unknown := filepath.Join(dir, "unknown.hcl")
	_ = os.WriteFile(unknown, []byte(`no_such_key = 1`), 0o600)
	// Two mistakes: both are named, in file order, on every start.
	twice := filepath.Join(dir, "twice.hcl")
	_ = os.WriteFile(twice, []byte("zz_first = 1\naa_second = 2\n"), 0o600)
	for i := 0; i < 5; i++ {
		_, err := Load("t", []string{"-config", twice}, envOf(nil))
		if msg := fmt.Sprint(err); !strings.Contains(msg, "zz_first") || !strings.Contains(msg, "aa_second") || strings.Index(msg, "zz_first") > strings.Index(msg, "aa_second") {
			t.Fatalf("two errors in a file: %v", err)
		}
	}
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-config", bad}, nil, "bad.hcl"},
		{[]string{"-config", unknown}, nil, "no_such_key"},
		{[]string{"-config", filepath.Join(dir, "missing.hcl")}, nil, "missing.hcl"},
		{[]string{"-listen", "nonsense"}, nil, "listen"},
		{[]string{"-log-level", "loud"}, nil, "log_level"},
		{nil, map[string]string{"SVC_LOG_JSON": "maybe"}, "SVC_LOG_JSON"},
		{nil, map[string]string{"SVC_MAX_BODY_BYTES": "-1"}, "max_body_bytes"},
		{[]string{"extra"}, nil, "unexpected arguments"},
	}
	for _, c := range cases {
		_, err := Load("t", c.args, envOf(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Load(%v, %v) = %v, want an error naming %q", c.args, c.env, err, c.want)
		}
	}
}
