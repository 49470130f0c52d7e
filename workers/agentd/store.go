package agentd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Store keeps sessions in one JSON file in agentd's data dir. A JSON file
// rather than bbolt: the data is a few hundred small records read whole at
// start and rewritten on state changes (not on every streamed delta), so a
// file written to a temporary name, fsynced and renamed over the old one
// (then the directory fsynced) is crash-safe, readable by hand and needs no
// second database engine in the worker.
type Store struct {
	path string
	mu   sync.Mutex
}

// OpenStore uses dir/sessions.json, creating dir.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Store{path: filepath.Join(dir, "sessions.json")}, nil
}

// Load reads every stored session (none when the file does not exist yet).
func (s *Store) Load() (map[string]*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*Session{}, nil
	}
	if err != nil {
		return nil, err
	}
	var file struct {
		Sessions map[string]*Session `json:"sessions"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", s.path, err)
	}
	if file.Sessions == nil {
		file.Sessions = map[string]*Session{}
	}
	return file.Sessions, nil
}

// Save writes all sessions atomically.
func (s *Store) Save(sessions map[string]*Session) error {
	b, err := json.MarshalIndent(struct {
		Sessions map[string]*Session `json:"sessions"`
	}{sessions}, "", " ")
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(s.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
