package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/svcd/svcd/supervisor/config"
)

// MinTokenBytes is the shortest token the daemon accepts without a warning.
const MinTokenBytes = 32

// tokenInfo says where the shared token came from; never what it is.
type tokenInfo struct {
	token  string
	file   string      // absolute path of the token file; "" when configured
	origin string      // "config", "file-loaded" or "file-generated"
	mode   fs.FileMode // the token file's real permission bits
}

// resolveToken returns the configured shared token, or reads the one stored in
// the data dir, or generates and stores a new one (mode 0600). A token file
// that group or others can read is refused, the way ssh refuses such a
// private key, and so is a token file or data dir another user owns or can
// write (datadirowner.go), unless insecure_token_file is set.
func resolveToken(cfg config.Config) (tokenInfo, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return tokenInfo{}, fmt.Errorf("create data dir: %w", err)
	}
	// The raft log lives there too: checked whether or not the token does.
	if !cfg.InsecureTokenFile {
		if err := checkDataDirOwner(cfg.DataDir, os.Geteuid()); err != nil {
			return tokenInfo{}, err
		}
	}
	if cfg.SharedToken != "" {
		return tokenInfo{token: cfg.SharedToken, origin: "config"}, nil
	}
	path, err := cfg.TokenFile()
	if err != nil {
		return tokenInfo{}, err
	}
	f, err := os.Open(path)
	switch {
	case err == nil:
		defer f.Close()
		return loadTokenFile(f, path, cfg.InsecureTokenFile)
	case !errors.Is(err, fs.ErrNotExist):
		return tokenInfo{}, fmt.Errorf("read token file: %w", err)
	}
	return generateTokenFile(path)
}

// loadTokenFile checks the open file's mode (on the descriptor, so what is
// checked is what is read) and reads the token.
func loadTokenFile(f *os.File, path string, insecureOK bool) (tokenInfo, error) {
	st, err := f.Stat()
	if err != nil {
		return tokenInfo{}, fmt.Errorf("stat token file: %w", err)
	}
	mode := st.Mode().Perm()
	if uid := ownerOf(st); uid != os.Geteuid() && !insecureOK {
		// Its owner chose the token, and with it who runs commands here.
		return tokenInfo{}, fmt.Errorf("token file %s is owned by uid %d, not by this daemon's user (uid %d): that user chose the token; delete it to have a new one generated, or run chown %d %s, or start with -insecure-token-file (insecure_token_file = true) to accept it",
			path, uid, os.Geteuid(), os.Geteuid(), path)
	}
	if mode&0o077 != 0 && !insecureOK {
		return tokenInfo{}, fmt.Errorf("token file %s has mode %04o: group or others can read the shared token; run chmod 600 %s, or start with -insecure-token-file (insecure_token_file = true) to accept it",
			path, mode, path)
	}
	b, err := readSmall(f)
	if err != nil {
		return tokenInfo{}, fmt.Errorf("read token file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return tokenInfo{}, fmt.Errorf("token file %s is empty; delete it to have a new token generated", path)
	}
	return tokenInfo{token: t, file: path, origin: "file-loaded", mode: mode}, nil
}

func readSmall(f *os.File) ([]byte, error) {
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if err != nil && n == 0 {
		return nil, err
	}
	return buf[:n], nil
}

func generateTokenFile(path string) (tokenInfo, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return tokenInfo{}, err
	}
	t := hex.EncodeToString(raw[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return tokenInfo{}, fmt.Errorf("create token file: %w", err)
	}
	if _, err := f.WriteString(t + "\n"); err != nil {
		f.Close()
		return tokenInfo{}, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return tokenInfo{}, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return tokenInfo{}, err
	}
	return tokenInfo{token: t, file: path, origin: "file-generated", mode: st.Mode().Perm()}, f.Close()
}

// logToken says honestly where the token came from and the file's real
// mode, and warns about a short token. It never logs the token.
func (s *Server) logToken(ti tokenInfo) {
	switch ti.origin {
	case "config":
		s.log.Info("shared token taken from the configuration (SVC_SHARED_TOKEN or shared_token)")
	case "file-generated":
		s.log.Info("shared token generated and stored; pass it as Authorization: Bearer for host operations", "path", ti.file, "mode", fmt.Sprintf("%04o", ti.mode))
	default:
		s.log.Info("shared token loaded from file", "path", ti.file, "mode", fmt.Sprintf("%04o", ti.mode))
		if ti.mode&0o077 != 0 {
			s.log.Warn("token file is readable by group or others (accepted because insecure_token_file is set)", "path", ti.file, "mode", fmt.Sprintf("%04o", ti.mode))
		}
	}
	if len(ti.token) < MinTokenBytes {
		s.log.Warn("shared token is short; use at least 32 random bytes", "length", len(ti.token), "minimum", MinTokenBytes)
	}
}
