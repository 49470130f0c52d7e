package bridgeproto

import (
	"encoding/json"
	"fmt"
	"math"
)

// Management actions the daemon may send to the plugin (SPEC.md).
var Actions = []string{
	"request_credentials", "tab_open", "tab_focus", "tab_reload",
	"plugin_status", "ws_reconnect", "controller_reload", "tab_restore",
}

// ValidAction reports whether a is one of Actions.
func ValidAction(a string) bool {
	for _, x := range Actions {
		if a == x {
			return true
		}
	}
	return false
}

// PlatformScopedAction reports whether an action acts on one platform's tab
// (and so needs a platform) rather than on the plugin as a whole.
func PlatformScopedAction(a string) bool {
	switch a {
	case "plugin_status", "ws_reconnect", "controller_reload":
		return false
	}
	return true
}

// wsReconnectAliases maps every accepted option name of ws_reconnect to its
// canonical name (SPEC.md lists the aliases).
var wsReconnectAliases = map[string]string{
	"disconnectMs": "disconnectMs", "disconnect_ms": "disconnectMs", "delayMs": "disconnectMs", "delay_ms": "disconnectMs",
	"repeatCount": "repeatCount", "repeat_count": "repeatCount",
	"repeatIntervalMs": "repeatIntervalMs", "repeat_interval_ms": "repeatIntervalMs", "intervalMs": "repeatIntervalMs", "interval_ms": "repeatIntervalMs",
}

// NormalizeWSReconnect reads ws_reconnect's options under any alias and
// returns them under the canonical names. Two aliases of one option with
// different values, or a value that is not a non-negative integer, is an
// error naming the field.
func NormalizeWSReconnect(opts map[string]json.RawMessage) (map[string]any, error) {
	out := map[string]any{}
	from := map[string]string{}
	for name, raw := range opts {
		canon, ok := wsReconnectAliases[name]
		if !ok {
			continue
		}
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || f < 0 || f != math.Trunc(f) || f > 1e9 {
			return nil, fmt.Errorf("%s must be a non-negative integer", name)
		}
		n := int64(f)
		if prev, ok := out[canon]; ok && prev.(int64) != n {
			return nil, fmt.Errorf("%s and %s give different values for %s", from[canon], name, canon)
		}
		out[canon], from[canon] = n, name
	}
	return out, nil
}
