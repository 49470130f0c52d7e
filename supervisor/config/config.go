// Package config loads svcd's configuration in layers: built-in defaults, then
// an HCL file (-config), then SVC_* environment variables, then flags. Each
// later layer overrides only what it sets.
package config

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/svcd/svcd/shared/logfile"
)

// Config is the whole supervisor configuration. The hcl tags are the names in
// a -config file; Env gives the SVC_* variables and Flags the command line.
type Config struct {
	Listen   string `hcl:"listen,optional"`
	DataDir  string `hcl:"data_dir,optional"`
	NodeID   string `hcl:"node_id,optional"`
	RaftAddr string `hcl:"raft_addr,optional"`
	// Cluster (leader/standby HA, docs/ha.md). Zero timings keep the tuned
	// defaults of raftstore.DefaultTimings.
	RaftAdvertise          string   `hcl:"raft_advertise,optional"` // raft address peers dial (default raft_addr)
	APIAdvertiseAddr       string   `hcl:"api_advertise,optional"`  // API address peers forward to (default listen)
	ClusterKey             string   `hcl:"cluster_key,optional"`    // authenticates raft traffic (default: the shared token)
	Join                   []string `hcl:"join,optional"`           // API addresses of members to join through (retried)
	RaftHeartbeatMs        int64    `hcl:"raft_heartbeat_timeout_ms,optional"`
	RaftElectionMs         int64    `hcl:"raft_election_timeout_ms,optional"`
	RaftLeaseMs            int64    `hcl:"raft_lease_timeout_ms,optional"`
	RaftSnapshotIntervalMs int64    `hcl:"raft_snapshot_interval_ms,optional"`
	RaftSnapshotThreshold  int64    `hcl:"raft_snapshot_threshold,optional"`
	RaftTrailingLogs       int64    `hcl:"raft_trailing_logs,optional"`
	// Cluster TLS (docs/ha.md, TLS): mutual TLS for raft and forwarded calls.
	ClusterTLS  string `hcl:"cluster_tls,optional"`   // "" (auto) | on | off
	TLSCAFile   string `hcl:"tls_ca_file,optional"`   // the cluster CA certificate (PEM)
	TLSCertFile string `hcl:"tls_cert_file,optional"` // this node's certificate (PEM)
	TLSKeyFile  string `hcl:"tls_key_file,optional"`  // this node's key (PEM, 0600)

	// Renewal scheduler (renewal.go, docs/renewal.md); zero = default.
	RenewalTickMs      int64    `hcl:"renewal_tick_ms,optional"`
	RenewalIdleMs      int64    `hcl:"renewal_idle_ms,optional"`
	RenewalMessage     string   `hcl:"renewal_message,optional"`
	RenewalMaxFailures int      `hcl:"renewal_max_failures,optional"`
	RenewalMaxRenewals int      `hcl:"renewal_max_renewals,optional"`
	Bootstrap          bool     `hcl:"bootstrap,optional"`
	SharedToken        string   `hcl:"shared_token,optional"`
	AllowedHosts       []string `hcl:"allowed_hosts,optional"`
	// AllowedOrigins may make state-changing requests from a browser besides
	// the daemon's own pages (empty by default; see docs/security.md).
	AllowedOrigins []string `hcl:"allowed_origins,optional"`
	// InsecureTokenFile lets the daemon start with a token file that group
	// or others can read (refused by default, as ssh refuses such a key).
	InsecureTokenFile bool `hcl:"insecure_token_file,optional"`
	// RequireToken says which routes demand the shared token: host-ops
	// (SPEC.md, an explicit choice), writes (default: no local process
	// without the token acts through the browser or changes state) or all
	// (requiretoken.go).
	RequireToken string `hcl:"require_token,optional"`
	MaxBodyBytes int64  `hcl:"max_body_bytes,optional"`
	ShutdownMs   int    `hcl:"shutdown_timeout_ms,optional"`
	LogLevel     string `hcl:"log_level,optional"`
	LogJSON      bool   `hcl:"log_json,optional"`
	// AllowDowngrade: see downgrade.go.
	AllowDowngrade bool `hcl:"allow_downgrade,optional"`
	// WitnessListen: see witness.go.
	WitnessListen string `hcl:"witness_listen,optional"`

	// Log file with rotation (logfile.go; Consul's names). Empty: stderr only.
	LogFile           string `hcl:"log_file,optional"`
	LogRotateBytes    int64  `hcl:"log_rotate_bytes,optional"`
	LogRotateMaxFiles int    `hcl:"log_rotate_max_files,optional"`
	StatusListen      string `hcl:"status_listen,optional"`
	StatusDaemon      string `hcl:"status_daemon_url,optional"`

	// Host operations (the hostops worker). See docs/hostops.md.
	ExecTimeoutMaxMs  int64    `hcl:"exec_timeout_max_ms,optional"`   // largest timeoutMs accepted
	ExecOutputCap     int      `hcl:"exec_output_cap_bytes,optional"` // per stream; more is cut and flagged
	FilesReadCap      int64    `hcl:"files_read_cap_bytes,optional"`
	FilesWriteCap     int64    `hcl:"files_write_cap_bytes,optional"`
	HostopsRoots      []string `hcl:"hostops_allowed_roots,optional"` // empty: no restriction
	ExecRunAsUID      int      `hcl:"exec_run_as_uid,optional"`       // -1: the daemon's
	ExecRunAsGID      int      `hcl:"exec_run_as_gid,optional"`       // -1: the daemon's
	ExecEnvAllow      []string `hcl:"exec_env_allow,optional"`        // empty: the daemon's env minus internals
	ExecRlimits       string   `hcl:"exec_rlimits,optional"`          // "cpu=10,as=1073741824,nofile=256"
	ExecMaxConcurrent int      `hcl:"exec_max_concurrent,optional"`   // execs running at once; more answer 429

	// The exec sandbox (docs/sandbox.md, config/sandbox.go).
	ExecSandbox      string   `hcl:"exec_sandbox,optional"`       // best-effort | required | off
	ExecCgroupParent string   `hcl:"exec_cgroup_parent,optional"` // "": <own cgroup>/svcd-exec
	ExecLimits       string   `hcl:"exec_limits,optional"`        // "memory=512MiB,pids=256,cpu=0"
	ExecLimitsMax    string   `hcl:"exec_limits_max,optional"`    // per-request overrides' ceiling
	ExecWriteRoots   []string `hcl:"exec_write_roots,optional"`   // empty: hostops_allowed_roots; + the command's scratch dir always
	ExecReadRoots    []string `hcl:"exec_read_roots,optional"`    // empty: everything
	ExecNetwork      string   `hcl:"exec_network,optional"`       // any | none
	ExecUser         string   `hcl:"exec_user,optional"`          // run commands as (daemon as root)
	ExecGroup        string   `hcl:"exec_group,optional"`

	// Worker manager (all workers). WorkerExecutable is the binary re-executed
	// as `svcd worker NAME`; svcd serve sets it to itself. Empty runs no
	// workers (in-process tests), and host operations then answer 503.
	WorkerExecutable        string `hcl:"worker_executable,optional"`
	WorkerCrashLoopCount    int    `hcl:"worker_crash_loop_count,optional"`
	WorkerCrashLoopWindowMs int    `hcl:"worker_crash_loop_window_ms,optional"`
	WorkerBackoffBaseMs     int    `hcl:"worker_backoff_base_ms,optional"`
	WorkerBackoffMaxMs      int    `hcl:"worker_backoff_max_ms,optional"`
	WorkerDrainTimeoutMs    int    `hcl:"worker_drain_timeout_ms,optional"`
	WorkerHealthIntervalMs  int    `hcl:"worker_health_interval_ms,optional"`
	// Performance (issue 15): a worker that ran this long before it exited
	// counts as healthy; its exit restarts it after the base backoff and
	// forgets earlier exits (see workers_perf.go).
	WorkerHealthyAfterMs int `hcl:"worker_healthy_after_ms,optional"`
	// Issue 25: a worker failed by a crash loop tries again after this
	// delay, doubled at every further crash loop up to an hour.
	WorkerFailedRetryMs int `hcl:"worker_failed_retry_ms,optional"`

	// Browser bridge and relay (see browser.go and docs/bridge-protocol.md).
	// Zero durations and counts mean the built-in defaults.
	BrowserPairingToken     string   `hcl:"browser_pairing_token,optional"` // empty: the shared token
	BrowserPairing          string   `hcl:"browser_pairing,optional"`       // "codes" (default, also when empty) or "token"
	BrowserExtensionIDs     []string `hcl:"browser_extension_ids,optional"` // allowed chrome-extension://<id> origins
	BrowserAllowedOrigins   []string `hcl:"browser_allowed_origins,optional"`
	BrowserAllowedPeers     []string `hcl:"browser_allowed_peers,optional"` // IPs or CIDRs inside 100.64.0.0/10
	BrowserKeepaliveMs      int64    `hcl:"browser_keepalive_ms,optional"`
	BrowserStaleAfterMs     int64    `hcl:"browser_stale_after_ms,optional"`
	BrowserLostAfterMs      int64    `hcl:"browser_lost_after_ms,optional"`
	BrowserSweepIntervalMs  int64    `hcl:"browser_sweep_interval_ms,optional"`
	BrowserActionTimeoutMs  int64    `hcl:"browser_action_timeout_ms,optional"`
	BrowserRequestTimeoutMs int64    `hcl:"browser_request_timeout_ms,optional"`
	BrowserMaxMessageBytes  int64    `hcl:"browser_max_message_bytes,optional"`
	BrowserMaxUnpaired      int64    `hcl:"browser_max_unpaired,optional"` // connections waiting for hello; more answer 503
	RelayWindowMs           int64    `hcl:"relay_window_ms,optional"`
	RelayWindowMax          int64    `hcl:"relay_window_max,optional"`
	RelayMaxInFlight        int64    `hcl:"relay_max_in_flight,optional"`
	RelayMaxWaitMs          int64    `hcl:"relay_max_wait_ms,optional"`
	RelayBackoffBaseMs      int64    `hcl:"relay_backoff_base_ms,optional"`
	RelayBackoffMaxMs       int64    `hcl:"relay_backoff_max_ms,optional"`
	RelayBreakerFailures    int64    `hcl:"relay_breaker_failures,optional"`
	RelayBreakerOpenMs      int64    `hcl:"relay_breaker_open_ms,optional"`
	RelayFlushIntervalMs    int64    `hcl:"relay_flush_interval_ms,optional"`
	RelayInProcess          bool     `hcl:"relay_in_process,optional"` // run the relay engine inside the supervisor instead of the worker

	// Instruction blocks (supervisor/instructions, docs/instructions.md).
	// Zero means the built-in default; see instructions.go.
	InstrBlockTimeoutMs   int64 `hcl:"instr_block_timeout_ms,optional"`      // per instruction (60000)
	InstrMaxBlocks        int   `hcl:"instr_max_blocks,optional"`            // per reply (32)
	InstrMaxRounds        int   `hcl:"instr_max_rounds,optional"`            // automatic rounds per conversation (10)
	InstrSectionMaxBytes  int   `hcl:"instr_section_max_bytes,optional"`     // report section output cap (4096)
	InstrReportMaxBytes   int   `hcl:"instr_report_max_bytes,optional"`      // whole report cap (16384)
	InstrIngestMaxTextLen int   `hcl:"instr_ingest_max_text_bytes,optional"` // ingest text cap (262144)

	// Agent daemon (agentd; workers/agentd, docs/agentd.md). Defaults in Defaults(), checks in agentd.go.
	AgentdListen         string `hcl:"agentd_listen,optional"`          // agentd's HTTP address, called by the /v1/agent proxy ("": a free loopback port chosen at spawn)
	AgentdSpawn          bool   `hcl:"agentd_spawn,optional"`           // run agentd as a supervised worker
	AgentdCommand        string `hcl:"agentd_command,optional"`         // the agent child, split on spaces
	AgentdCodexHome      string `hcl:"agentd_codex_home,optional"`      // CODEX_HOME for the child ("" inherits)
	AgentdApprovalPolicy string `hcl:"agentd_approval_policy,optional"` // decline | accept
	// End agentd.

	ConfigFile    string // where the file layer came from, if any
	TokenFromFile string // set by the supervisor when it generated or read the token file

	sharedTokenFromEnv bool // SVC_SHARED_TOKEN set it (LocateToken names the source)
}

// Defaults is the embedded default: a single node on loopback with data in ./data.
func Defaults() Config {
	return Config{
		Listen:       "127.0.0.1:4317",
		DataDir:      "./data",
		NodeID:       "node1",
		Bootstrap:    true,
		MaxBodyBytes: 1 << 20,
		ShutdownMs:   10000,
		LogLevel:     "info",
		// Rotated logs are not kept forever (issue 35): see logfile.DefaultMaxFiles.
		LogRotateMaxFiles: logfile.DefaultMaxFiles,
		RequireToken:      RequireTokenWrites,
		// agentd
		AgentdListen: "", AgentdCommand: "codex app-server", AgentdApprovalPolicy: "decline",
		AgentdSpawn:  true, // agentd runs by default; without Codex its child is `missing`
		StatusListen: "127.0.0.1:4318",
		StatusDaemon: "http://127.0.0.1:4317",

		ExecTimeoutMaxMs:  600_000,
		ExecOutputCap:     1 << 20,
		FilesReadCap:      10 << 20,
		FilesWriteCap:     10 << 20,
		ExecRunAsUID:      -1,
		ExecRunAsGID:      -1,
		ExecMaxConcurrent: 32,
		ExecSandbox:       "best-effort",
		ExecNetwork:       "any",

		// The pinned id of the bundled extension (extension/manifest.json key).
		BrowserExtensionIDs: []string{BundledExtensionID},

		WorkerCrashLoopCount:    5,
		WorkerCrashLoopWindowMs: 60_000,
		WorkerBackoffBaseMs:     50,
		WorkerBackoffMaxMs:      30_000,
		WorkerDrainTimeoutMs:    0, // derived: exec_timeout_max_ms + 5 s (DrainTimeout)
		WorkerHealthIntervalMs:  2_000,
		WorkerHealthyAfterMs:    10_000, // performance (issue 15)
		WorkerFailedRetryMs:     300_000,
	}
}

// DrainTimeout is how long a rolling restart lets calls on the old worker
// instance finish. Unset, it is the longest exec timeout plus 5 s, so a
// rolling restart never cuts an exec that is still inside its own timeout.
func (c Config) DrainTimeout() time.Duration {
	if c.WorkerDrainTimeoutMs > 0 {
		return time.Duration(c.WorkerDrainTimeoutMs) * time.Millisecond
	}
	return time.Duration(c.ExecTimeoutMaxMs)*time.Millisecond + 5*time.Second
}

// ShutdownTimeout is how long SIGTERM waits for requests in flight.
func (c Config) ShutdownTimeout() time.Duration {
	return time.Duration(c.ShutdownMs) * time.Millisecond
}

// Load builds a Config from args (without the subcommand) and an environment
// lookup. It returns flag.ErrHelp for -h.
func Load(name string, args []string, getenv func(string) string) (Config, error) {
	cfg := Defaults()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	configFile := fs.String("config", "", "HCL config file")
	fl := bindFlags(fs)
	maps.Copy(fl, bindLogFileFlags(fs))
	maps.Copy(fl, bindDowngradeFlags(fs))
	maps.Copy(fl, bindWitnessFlags(fs))
	if shown := helpFlagsOf(name); shown != nil {
		fs.Usage = func() { printSomeDefaults(fs, shown) }
	}
	if err := fs.Parse(args); err != nil {
		return cfg, suggestFlag(fs, err)
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if *configFile == "" {
		*configFile = getenv("SVC_CONFIG")
	}
	if *configFile != "" {
		if err := loadFile(*configFile, &cfg); err != nil {
			return cfg, err
		}
		cfg.ConfigFile = *configFile
	}
	if err := applyEnv(&cfg, getenv); err != nil {
		return cfg, err
	}
	fs.Visit(func(f *flag.Flag) {
		if set, ok := fl[f.Name]; ok { // -config has no setter: it was read above
			set(&cfg)
		}
	})
	return cfg, cfg.Validate()
}

func loadFile(path string, cfg *Config) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	return decodeFile(src, path, cfg)
}

// decodeFile sets cfg from the HCL source of the config file named path.
func decodeFile(src []byte, path string, cfg *Config) error {
	file, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return fmt.Errorf("config file %s: %s", path, describeDiags(diags))
	}
	if diags := gohcl.DecodeBody(file.Body, nil, cfg); diags.HasErrors() {
		return fmt.Errorf("config file %s: %s", path, describeDiags(diags))
	}
	return nil
}

// describeDiags lists every error of a config file in file order (up to
// maxDiags), so the operator sees all of them at once and the same text on
// every start: HCL reports decode errors in map order and Error() shows
// only the first.
func describeDiags(diags hcl.Diagnostics) string {
	const maxDiags = 10
	errs := make(hcl.Diagnostics, 0, len(diags))
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i].Subject, errs[j].Subject
		switch {
		case a == nil || b == nil:
			return a != nil
		case a.Start.Byte != b.Start.Byte:
			return a.Start.Byte < b.Start.Byte
		}
		return errs[i].Error() < errs[j].Error()
	})
	var parts []string
	for i, d := range errs {
		if i == maxDiags {
			parts = append(parts, fmt.Sprintf("and %d more", len(errs)-maxDiags))
			break
		}
		parts = append(parts, d.Error())
	}
	return strings.Join(parts, "; ")
}

// Validate refuses a configuration the daemon could not run with.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen %q: %w", c.Listen, err))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data_dir must not be empty"))
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("max_body_bytes must be positive, got %d", c.MaxBodyBytes))
	}
	if c.ShutdownMs <= 0 {
		errs = append(errs, fmt.Errorf("shutdown_timeout_ms must be positive, got %d", c.ShutdownMs))
	}
	positive := map[string]int64{
		"exec_timeout_max_ms": c.ExecTimeoutMaxMs, "exec_output_cap_bytes": int64(c.ExecOutputCap),
		"files_read_cap_bytes": c.FilesReadCap, "files_write_cap_bytes": c.FilesWriteCap,
		"worker_crash_loop_count": int64(c.WorkerCrashLoopCount), "worker_crash_loop_window_ms": int64(c.WorkerCrashLoopWindowMs),
		"worker_backoff_base_ms": int64(c.WorkerBackoffBaseMs), "worker_backoff_max_ms": int64(c.WorkerBackoffMaxMs),
		"worker_health_interval_ms": int64(c.WorkerHealthIntervalMs),
		"worker_failed_retry_ms":    int64(c.WorkerFailedRetryMs),
		"exec_max_concurrent":       int64(c.ExecMaxConcurrent),
	}
	if c.WorkerDrainTimeoutMs < 0 {
		errs = append(errs, fmt.Errorf("worker_drain_timeout_ms must be 0 (derived) or positive, got %d", c.WorkerDrainTimeoutMs))
	}
	for _, name := range sortedKeys(positive) {
		if positive[name] <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", name, positive[name]))
		}
	}
	const maxCap = 1 << 30 // gRPC messages carry whole payloads; keep them sane
	if c.FilesReadCap > maxCap || c.FilesWriteCap > maxCap || c.ExecOutputCap > maxCap {
		errs = append(errs, fmt.Errorf("files_read_cap_bytes, files_write_cap_bytes and exec_output_cap_bytes must be at most %d", maxCap))
	}
	if c.ExecRunAsUID < -1 || c.ExecRunAsGID < -1 {
		errs = append(errs, errors.New("exec_run_as_uid and exec_run_as_gid must be -1 (unchanged) or a numeric id"))
	}
	errs = append(errs, c.validateBrowser()...)
	errs = append(errs, c.validatePerf()...)
	errs = append(errs, c.validateInstructions()...)
	errs = append(errs, c.validateGuard()...)
	errs = append(errs, c.validateRequireToken()...)
	errs = append(errs, c.validateSandbox()...)
	errs = append(errs, c.validateCluster()...)
	errs = append(errs, c.validateRenewal()...)
	errs = append(errs, c.validateAgentd()...)
	errs = append(errs, c.validateLogFile()...)
	errs = append(errs, c.validateWitnessListen()...)
	switch strings.ToLower(c.LogLevel) {
	case "trace", "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log_level %q: want trace, debug, info, warn or error", c.LogLevel))
	}
	return errors.Join(errs...)
}

// envVar describes one SVC_* variable and how it sets the config.
type envVar struct {
	name string
	set  func(c *Config, v string) error
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func envVars() []envVar {
	str := func(dst func(*Config) *string) func(*Config, string) error {
		return func(c *Config, v string) error { *dst(c) = v; return nil }
	}
	boolean := func(dst func(*Config) *bool) func(*Config, string) error {
		return func(c *Config, v string) error {
			b, err := strconv.ParseBool(v)
			*dst(c) = b
			return err
		}
	}
	return append([]envVar{
		{"SVC_LISTEN", str(func(c *Config) *string { return &c.Listen })},
		{"SVC_DATA_DIR", str(func(c *Config) *string { return &c.DataDir })},
		{"SVC_NODE_ID", str(func(c *Config) *string { return &c.NodeID })},
		{"SVC_RAFT_ADDR", str(func(c *Config) *string { return &c.RaftAddr })},
		{"SVC_BOOTSTRAP", boolean(func(c *Config) *bool { return &c.Bootstrap })},
		{"SVC_SHARED_TOKEN", func(c *Config, v string) error { c.SharedToken, c.sharedTokenFromEnv = v, true; return nil }},
		{"SVC_REQUIRE_TOKEN", str(func(c *Config) *string { return &c.RequireToken })},
		{"SVC_ALLOWED_HOSTS", func(c *Config, v string) error { c.AllowedHosts = splitList(v); return nil }},
		{"SVC_ALLOWED_ORIGINS", func(c *Config, v string) error { c.AllowedOrigins = splitList(v); return nil }},
		{"SVC_INSECURE_TOKEN_FILE", boolean(func(c *Config) *bool { return &c.InsecureTokenFile })},
		{"SVC_EXEC_MAX_CONCURRENT", func(c *Config, v string) (err error) { c.ExecMaxConcurrent, err = strconv.Atoi(v); return }},
		{"SVC_MAX_BODY_BYTES", func(c *Config, v string) (err error) { c.MaxBodyBytes, err = strconv.ParseInt(v, 10, 64); return }},
		{"SVC_SHUTDOWN_TIMEOUT_MS", func(c *Config, v string) (err error) { c.ShutdownMs, err = strconv.Atoi(v); return }},
		{"SVC_LOG_LEVEL", str(func(c *Config) *string { return &c.LogLevel })},
		{"SVC_LOG_JSON", boolean(func(c *Config) *bool { return &c.LogJSON })},
		{"SVC_STATUS_LISTEN", str(func(c *Config) *string { return &c.StatusListen })},
		{"SVC_STATUS_DAEMON_URL", str(func(c *Config) *string { return &c.StatusDaemon })},
		{"SVC_EXEC_TIMEOUT_MAX_MS", func(c *Config, v string) (err error) { c.ExecTimeoutMaxMs, err = strconv.ParseInt(v, 10, 64); return }},
		{"SVC_EXEC_OUTPUT_CAP_BYTES", func(c *Config, v string) (err error) { c.ExecOutputCap, err = strconv.Atoi(v); return }},
		{"SVC_FILES_READ_CAP_BYTES", func(c *Config, v string) (err error) { c.FilesReadCap, err = strconv.ParseInt(v, 10, 64); return }},
		{"SVC_FILES_WRITE_CAP_BYTES", func(c *Config, v string) (err error) { c.FilesWriteCap, err = strconv.ParseInt(v, 10, 64); return }},
		{"SVC_HOSTOPS_ALLOWED_ROOTS", func(c *Config, v string) error { c.HostopsRoots = splitList(v); return nil }},
		{"SVC_EXEC_RUN_AS_UID", func(c *Config, v string) (err error) { c.ExecRunAsUID, err = strconv.Atoi(v); return }},
		{"SVC_EXEC_RUN_AS_GID", func(c *Config, v string) (err error) { c.ExecRunAsGID, err = strconv.Atoi(v); return }},
		{"SVC_EXEC_ENV_ALLOW", func(c *Config, v string) error { c.ExecEnvAllow = splitList(v); return nil }},
		{"SVC_EXEC_RLIMITS", str(func(c *Config) *string { return &c.ExecRlimits })},
		{"SVC_EXEC_SANDBOX", str(func(c *Config) *string { return &c.ExecSandbox })},
		{"SVC_EXEC_CGROUP_PARENT", str(func(c *Config) *string { return &c.ExecCgroupParent })},
		{"SVC_EXEC_LIMITS", str(func(c *Config) *string { return &c.ExecLimits })},
		{"SVC_EXEC_LIMITS_MAX", str(func(c *Config) *string { return &c.ExecLimitsMax })},
		{"SVC_EXEC_NETWORK", str(func(c *Config) *string { return &c.ExecNetwork })},
		{"SVC_EXEC_USER", str(func(c *Config) *string { return &c.ExecUser })},
		{"SVC_EXEC_GROUP", str(func(c *Config) *string { return &c.ExecGroup })},
		{"SVC_EXEC_WRITE_ROOTS", func(c *Config, v string) error { c.ExecWriteRoots = splitList(v); return nil }},
		{"SVC_WORKER_CRASH_LOOP_COUNT", func(c *Config, v string) (err error) { c.WorkerCrashLoopCount, err = strconv.Atoi(v); return }},
		{"SVC_WORKER_CRASH_LOOP_WINDOW_MS", func(c *Config, v string) (err error) { c.WorkerCrashLoopWindowMs, err = strconv.Atoi(v); return }},
		{"SVC_WORKER_BACKOFF_BASE_MS", func(c *Config, v string) (err error) { c.WorkerBackoffBaseMs, err = strconv.Atoi(v); return }},
		{"SVC_WORKER_BACKOFF_MAX_MS", func(c *Config, v string) (err error) { c.WorkerBackoffMaxMs, err = strconv.Atoi(v); return }},
		{"SVC_WORKER_DRAIN_TIMEOUT_MS", func(c *Config, v string) (err error) { c.WorkerDrainTimeoutMs, err = strconv.Atoi(v); return }},
		{"SVC_WORKER_HEALTH_INTERVAL_MS", func(c *Config, v string) (err error) { c.WorkerHealthIntervalMs, err = strconv.Atoi(v); return }},
		{"SVC_WORKER_HEALTHY_AFTER_MS", func(c *Config, v string) (err error) { c.WorkerHealthyAfterMs, err = strconv.Atoi(v); return }},
		{"SVC_WORKER_FAILED_RETRY_MS", func(c *Config, v string) (err error) { c.WorkerFailedRetryMs, err = strconv.Atoi(v); return }},
	}, append(append(append(append(browserEnvVars(), instrEnvVars()...), clusterEnvVars()...), renewalEnvVars()...), append(append(agentdEnvVars(), logFileEnvVars()...), append(downgradeEnvVars(), witnessEnvVars()...)...)...)...)
}

func applyEnv(c *Config, getenv func(string) string) error {
	for _, ev := range envVars() {
		v := getenv(ev.name)
		if v == "" {
			continue
		}
		if err := ev.set(c, v); err != nil {
			// Only parsed (non-secret) variables can fail, so echoing v is safe.
			return fmt.Errorf("%s=%q: %w", ev.name, v, err)
		}
	}
	return nil
}

// bindFlags declares the flags and returns, per flag name, how its parsed
// value is copied onto a Config (applied only for flags actually given).
func bindFlags(fs *flag.FlagSet) map[string]func(*Config) {
	d := Defaults()
	listen := fs.String("listen", d.Listen, "address of the HTTP listener")
	dataDir := fs.String("data-dir", d.DataDir, "directory for raft data and the token file")
	nodeID := fs.String("node-id", d.NodeID, "raft node id")
	raftAddr := fs.String("raft-addr", "", "raft TCP address for multi-node clusters (empty: single node)")
	raftAdv := fs.String("raft-advertise", "", "raft address peers dial (default: -raft-addr)")
	apiAdv := fs.String("api-advertise", "", "API address peers forward to (default: -listen)")
	join := fs.String("join", "", "API address(es) of cluster members to join through, comma separated")
	bootstrap := fs.Bool("bootstrap", d.Bootstrap, "form a new cluster when there is no state")
	hosts := fs.String("allowed-hosts", "", "extra Host header values to accept, comma separated")
	origins := fs.String("allowed-origins", "", "browser origins allowed to make state-changing requests, comma separated (empty: only the daemon's own)")
	insecureToken := fs.Bool("insecure-token-file", false, "start even when the token file is readable by group or others")
	requireToken := fs.String("require-token", d.RequireToken, "routes that demand the shared token: host-ops, writes or all")
	execConc := fs.Int("exec-max-concurrent", d.ExecMaxConcurrent, "execs running at once; more answer 429")
	maxBody := fs.Int64("max-body-bytes", d.MaxBodyBytes, "request body cap in bytes")
	level := fs.String("log-level", d.LogLevel, "trace, debug, info, warn or error")
	logJSON := fs.Bool("log-json", false, "log as JSON lines")
	statusListen := fs.String("status-listen", d.StatusListen, "status wrapper listen address")
	statusDaemon := fs.String("daemon-url", d.StatusDaemon, "daemon base URL the status wrapper reads")
	execMax := fs.Int64("exec-timeout-max-ms", d.ExecTimeoutMaxMs, "largest timeoutMs POST /v1/exec accepts")
	outCap := fs.Int("exec-output-cap-bytes", d.ExecOutputCap, "exec stdout/stderr cap per stream")
	readCap := fs.Int64("files-read-cap-bytes", d.FilesReadCap, "largest file POST /v1/files/read returns")
	writeCap := fs.Int64("files-write-cap-bytes", d.FilesWriteCap, "largest content POST /v1/files/write accepts")
	roots := fs.String("hostops-allowed-roots", "", "comma separated folders host operations are confined to (empty: anywhere)")
	runUID := fs.Int("exec-run-as-uid", d.ExecRunAsUID, "run exec commands as this uid (-1: the daemon's)")
	runGID := fs.Int("exec-run-as-gid", d.ExecRunAsGID, "run exec commands as this gid (-1: the daemon's)")
	envAllow := fs.String("exec-env-allow", "", "comma separated environment variables exec commands see (empty: all but internals)")
	rlimits := fs.String("exec-rlimits", "", "resource limits of exec commands, e.g. cpu=10,as=1073741824,nofile=256")
	return map[string]func(*Config){
		"listen":              func(c *Config) { c.Listen = *listen },
		"data-dir":            func(c *Config) { c.DataDir = *dataDir },
		"node-id":             func(c *Config) { c.NodeID = *nodeID },
		"raft-addr":           func(c *Config) { c.RaftAddr = *raftAddr },
		"raft-advertise":      func(c *Config) { c.RaftAdvertise = *raftAdv },
		"api-advertise":       func(c *Config) { c.APIAdvertiseAddr = *apiAdv },
		"join":                func(c *Config) { c.Join = splitList(*join) },
		"bootstrap":           func(c *Config) { c.Bootstrap = *bootstrap },
		"allowed-hosts":       func(c *Config) { c.AllowedHosts = splitList(*hosts) },
		"allowed-origins":     func(c *Config) { c.AllowedOrigins = splitList(*origins) },
		"insecure-token-file": func(c *Config) { c.InsecureTokenFile = *insecureToken },
		"require-token":       func(c *Config) { c.RequireToken = *requireToken },
		"exec-max-concurrent": func(c *Config) { c.ExecMaxConcurrent = *execConc },
		"max-body-bytes":      func(c *Config) { c.MaxBodyBytes = *maxBody },
		"log-level":           func(c *Config) { c.LogLevel = *level },
		"log-json":            func(c *Config) { c.LogJSON = *logJSON },
		"status-listen":       func(c *Config) { c.StatusListen = *statusListen },
		"daemon-url":          func(c *Config) { c.StatusDaemon = *statusDaemon },

		"exec-timeout-max-ms":   func(c *Config) { c.ExecTimeoutMaxMs = *execMax },
		"exec-output-cap-bytes": func(c *Config) { c.ExecOutputCap = *outCap },
		"files-read-cap-bytes":  func(c *Config) { c.FilesReadCap = *readCap },
		"files-write-cap-bytes": func(c *Config) { c.FilesWriteCap = *writeCap },
		"hostops-allowed-roots": func(c *Config) { c.HostopsRoots = splitList(*roots) },
		"exec-run-as-uid":       func(c *Config) { c.ExecRunAsUID = *runUID },
		"exec-run-as-gid":       func(c *Config) { c.ExecRunAsGID = *runGID },
		"exec-env-allow":        func(c *Config) { c.ExecEnvAllow = splitList(*envAllow) },
		"exec-rlimits":          func(c *Config) { c.ExecRlimits = *rlimits },
	}
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
