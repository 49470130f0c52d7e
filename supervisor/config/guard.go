package config

import (
	"fmt"
	"net/url"
)

// validOrigin accepts scheme://host[:port] and nothing else: an origin has
// no path, and "null" or "*" would let any sandboxed page or site in.
func validOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("%q: want scheme://host[:port]", o)
	}
	return nil
}

func (c Config) validateGuard() []error {
	var errs []error
	for _, o := range c.AllowedOrigins {
		if err := validOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("allowed_origins %w", err))
		}
	}
	return errs
}
