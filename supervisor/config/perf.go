package config

import "fmt"

// validatePerf checks the performance settings (issue 15).
func (c Config) validatePerf() []error {
	var errs []error
	if c.WorkerHealthyAfterMs <= 0 {
		errs = append(errs, fmt.Errorf("worker_healthy_after_ms must be positive, got %d", c.WorkerHealthyAfterMs))
	}
	return errs
}
