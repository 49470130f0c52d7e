package config

import "path/filepath"

// TokenFileName is the file in the data dir that holds a generated token.
const TokenFileName = "shared_token"

// TokenFile is the absolute path of the token file a daemon with this
// configuration generates or loads when no shared_token is configured. The
// daemon and svcctl both use it, so they look in the same place.
func (c Config) TokenFile() (string, error) {
	return filepath.Abs(filepath.Join(c.DataDir, TokenFileName))
}
