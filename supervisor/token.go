package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/svcd/svcd/supervisor/config"
)

// TokenFileName is the file in the data dir that holds a generated token.
const TokenFileName = "shared_token"

// resolveToken returns the configured shared token, or reads the one stored in
// the data dir, or generates and stores a new one (mode 0600). The token is
// never logged; only the file's path is.
func resolveToken(cfg config.Config) (token, file string, err error) {
	if cfg.SharedToken != "" {
		return cfg.SharedToken, "", nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return "", "", fmt.Errorf("create data dir: %w", err)
	}
	path, err := filepath.Abs(filepath.Join(cfg.DataDir, TokenFileName))
	if err != nil {
		return "", "", err
	}
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", "", fmt.Errorf("token file %s is empty; delete it to have a new token generated", path)
		}
		return t, path, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("read token file: %w", err)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", "", err
	}
	t := hex.EncodeToString(raw[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", "", fmt.Errorf("create token file: %w", err)
	}
	if _, err := f.WriteString(t + "\n"); err != nil {
		f.Close()
		return "", "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", "", err
	}
	return t, path, f.Close()
}
