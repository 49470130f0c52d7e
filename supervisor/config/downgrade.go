package config

import (
	"flag"
	"strconv"
)

// allow_downgrade (SVC_ALLOW_DOWNGRADE, -allow-downgrade) opens a data dir
// last written by a newer minor release (raftstore/versions.go; issue 35).
// Off by default: an older build may read a newer build's state as empty.

func downgradeEnvVars() []envVar {
	return []envVar{
		{"SVC_ALLOW_DOWNGRADE", func(c *Config, v string) (err error) { c.AllowDowngrade, err = strconv.ParseBool(v); return }},
	}
}

func bindDowngradeFlags(fs *flag.FlagSet) map[string]func(*Config) {
	allow := fs.Bool("allow-downgrade", false, "open a data dir last written by a newer minor release (docs/deploy.md, Downgrading)")
	return map[string]func(*Config){
		"allow-downgrade": func(c *Config) { c.AllowDowngrade = *allow },
	}
}
