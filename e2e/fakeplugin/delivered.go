package fakeplugin

import "sync"

// Delivered is what a plugin that dedups remembers across its connections,
// as the extension keeps it in chrome.storage.session: the delivery_keys
// whose text it typed. Share one between the Plugins that play the same
// browser before and after a daemon restart.
type Delivered struct {
	mu   sync.Mutex
	keys map[string]bool
}

// NewDelivered is an empty memory.
func NewDelivered() *Delivered { return &Delivered{keys: map[string]bool{}} }

// Mark records key as typed (tests that hold the answer mark it themselves:
// typed, but the answer lost with the daemon). A nil Delivered, the plugin
// without dedup, remembers nothing.
func (d *Delivered) Mark(key string) {
	if d == nil || key == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys[key] = true
}

// Has reports whether key was typed.
func (d *Delivered) Has(key string) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return key != "" && d.keys[key]
}
