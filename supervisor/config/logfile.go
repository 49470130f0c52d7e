package config

import (
	"flag"
	"strconv"

	"github.com/svcd/svcd/shared/logfile"
)

// LogFileOptions are the log_file keys as the rotating writer takes them.
func (c Config) LogFileOptions() logfile.Options {
	return logfile.Options{Path: c.LogFile, RotateBytes: c.LogRotateBytes, MaxFiles: c.LogRotateMaxFiles}
}

// validateLogFile checks log_file, log_rotate_bytes and log_rotate_max_files.
func (c Config) validateLogFile() []error {
	if err := c.LogFileOptions().Validate(); err != nil {
		return []error{err}
	}
	return nil
}

// logFileEnvVars are SVC_LOG_FILE, SVC_LOG_ROTATE_BYTES, SVC_LOG_ROTATE_MAX_FILES.
func logFileEnvVars() []envVar {
	return []envVar{
		{"SVC_LOG_FILE", func(c *Config, v string) error { c.LogFile = v; return nil }},
		{"SVC_LOG_ROTATE_BYTES", func(c *Config, v string) (err error) { c.LogRotateBytes, err = strconv.ParseInt(v, 10, 64); return }},
		{"SVC_LOG_ROTATE_MAX_FILES", func(c *Config, v string) (err error) { c.LogRotateMaxFiles, err = strconv.Atoi(v); return }},
	}
}

// bindLogFileFlags declares -log-file, -log-rotate-bytes, -log-rotate-max-files.
func bindLogFileFlags(fs *flag.FlagSet) map[string]func(*Config) {
	file := fs.String("log-file", "", "also write logs to this file, rotated by the daemon (empty: stderr only)")
	bytes := fs.Int64("log-rotate-bytes", 0, "rotate the log file before it grows past this size (0: never)")
	maxFiles := fs.Int("log-rotate-max-files", logfile.DefaultMaxFiles, "rotated log files to keep (0: all, -1: none)")
	return map[string]func(*Config){
		"log-file":             func(c *Config) { c.LogFile = *file },
		"log-rotate-bytes":     func(c *Config) { c.LogRotateBytes = *bytes },
		"log-rotate-max-files": func(c *Config) { c.LogRotateMaxFiles = *maxFiles },
	}
}
