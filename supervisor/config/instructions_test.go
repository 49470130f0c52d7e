package config

import (
	"strings"
	"testing"
	"time"
)

func TestInstructionSettings(t *testing.T) {
	c := Defaults()
	if c.InstrBlockTimeout() != time.Minute {
		t.Fatalf("default timeout %v", c.InstrBlockTimeout())
	}
	if b, r, s, rep, txt := c.InstrLimits(); b != 32 || r != 10 || s != 4096 || rep != 16384 || txt != 256<<10 {
		t.Fatalf("defaults %d %d %d %d %d", b, r, s, rep, txt)
	}
	env := map[string]string{"SVC_INSTR_MAX_ROUNDS": "3", "SVC_INSTR_BLOCK_TIMEOUT_MS": "1500"}
	c, err := Load("serve", nil, func(k string) string { return env[k] })
	if err != nil || c.InstrMaxRounds != 3 || c.InstrBlockTimeout() != 1500*time.Millisecond {
		t.Fatalf("env: %v %+v", err, c.InstrMaxRounds)
	}
	c = Defaults()
	c.InstrMaxBlocks = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "instr_max_blocks") {
		t.Fatalf("negative: %v", err)
	}
	c = Defaults()
	c.InstrSectionMaxBytes = 20000
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "instr_section_max_bytes") {
		t.Fatalf("section over report: %v", err)
	}
}
