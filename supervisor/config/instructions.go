package config

import (
	"fmt"
	"strconv"
	"time"
)

// Instruction-block settings with their defaults applied (zero: default).

// InstrBlockTimeout is the per-instruction timeout.
func (c Config) InstrBlockTimeout() time.Duration {
	return time.Duration(orDefault(c.InstrBlockTimeoutMs, 60_000)) * time.Millisecond
}

// InstrLimits returns max blocks per reply, max automatic rounds per
// conversation, the report section and whole-report caps and the ingest text cap.
func (c Config) InstrLimits() (blocks, rounds, section, report, text int) {
	return int(orDefault(int64(c.InstrMaxBlocks), 32)), int(orDefault(int64(c.InstrMaxRounds), 10)),
		int(orDefault(int64(c.InstrSectionMaxBytes), 4<<10)), int(orDefault(int64(c.InstrReportMaxBytes), 16<<10)),
		int(orDefault(int64(c.InstrIngestMaxTextLen), 256<<10))
}

func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

func (c Config) validateInstructions() []error {
	var errs []error
	for name, v := range map[string]int64{
		"instr_block_timeout_ms": c.InstrBlockTimeoutMs, "instr_max_blocks": int64(c.InstrMaxBlocks),
		"instr_max_rounds": int64(c.InstrMaxRounds), "instr_section_max_bytes": int64(c.InstrSectionMaxBytes),
		"instr_report_max_bytes": int64(c.InstrReportMaxBytes), "instr_ingest_max_text_bytes": int64(c.InstrIngestMaxTextLen),
	} {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s must be 0 (default) or positive, got %d", name, v))
		}
	}
	if _, _, sec, rep, _ := c.InstrLimits(); sec < 256 || rep < 1024 || sec > rep {
		errs = append(errs, fmt.Errorf("instr_section_max_bytes (%d) must be at least 256 and at most instr_report_max_bytes (%d, at least 1024)", sec, rep))
	}
	return errs
}

// instrEnvVars are the SVC_INSTR_* variables.
func instrEnvVars() []envVar {
	i64 := func(dst func(*Config) *int64) func(*Config, string) error {
		return func(c *Config, v string) (err error) { *dst(c), err = strconv.ParseInt(v, 10, 64); return }
	}
	i := func(dst func(*Config) *int) func(*Config, string) error {
		return func(c *Config, v string) (err error) { *dst(c), err = strconv.Atoi(v); return }
	}
	return []envVar{
		{"SVC_INSTR_BLOCK_TIMEOUT_MS", i64(func(c *Config) *int64 { return &c.InstrBlockTimeoutMs })},
		{"SVC_INSTR_MAX_BLOCKS", i(func(c *Config) *int { return &c.InstrMaxBlocks })},
		{"SVC_INSTR_MAX_ROUNDS", i(func(c *Config) *int { return &c.InstrMaxRounds })},
		{"SVC_INSTR_SECTION_MAX_BYTES", i(func(c *Config) *int { return &c.InstrSectionMaxBytes })},
		{"SVC_INSTR_REPORT_MAX_BYTES", i(func(c *Config) *int { return &c.InstrReportMaxBytes })},
		{"SVC_INSTR_INGEST_MAX_TEXT_BYTES", i(func(c *Config) *int { return &c.InstrIngestMaxTextLen })},
	}
}
