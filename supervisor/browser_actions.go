package supervisor

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/svcd/svcd/shared/api"
	"github.com/svcd/svcd/shared/bridgeproto"
)

// handleBrowserAction serves /v1/browser/actions and, with fixed set, the
// legacy platform_a open/reload routes.
func (s *Server) handleBrowserAction(fixed string) HandlerFn {
	return func(w http.ResponseWriter, r *http.Request) error {
		var body map[string]json.RawMessage
		if err := s.decode(r, &body); err != nil {
			return err
		}
		str := func(names ...string) (string, error) {
			for _, n := range names {
				if raw, ok := body[n]; ok && string(raw) != "null" {
					var v string
					if json.Unmarshal(raw, &v) != nil {
						return "", api.Unprocessable("invalid_field", "field %q must be a string", n)
					}
					return strings.TrimSpace(v), nil
				}
			}
			return "", nil
		}
		action, err := str("action")
		if err != nil {
			return err
		}
		platform, err := str("platform")
		if err != nil {
			return err
		}
		clientID, err := str("clientId", "client_id")
		if err != nil {
			return err
		}
		if fixed != "" {
			if action != "" && action != fixed {
				return api.Unprocessable("invalid_action", "this route sends %s; the body asks for %q", fixed, action)
			}
			if platform != "" && platform != bridgeproto.PlatformA {
				return api.Unprocessable("invalid_platform", "this route is for platform_a")
			}
			action, platform = fixed, bridgeproto.PlatformA
		}
		switch {
		case action == "":
			return api.Unprocessable("missing_field", "field \"action\" is required: %s", strings.Join(bridgeproto.Actions, ", "))
		case !bridgeproto.ValidAction(action):
			return api.Unprocessable("invalid_action", "unknown action %q: want one of %s", api.Clip(action), strings.Join(bridgeproto.Actions, ", "))
		case platform != "" && !bridgeproto.ValidPlatform(platform):
			return api.Unprocessable("invalid_platform", "unknown platform %q: want platform_a or platform_b", api.Clip(platform))
		case platform != "" && !bridgeproto.ManagedPlatform(platform):
			return api.Unprocessable("invalid_platform", "%s is relay only; shell and credential management covers platform_a and platform_b", platform)
		case platform == "" && bridgeproto.PlatformScopedAction(action):
			return api.Unprocessable("missing_field", "action %s needs a platform: platform_a or platform_b", action)
		}
		options, err := actionOptions(action, body)
		if err != nil {
			return err
		}
		out, err := s.browser.hub.Act(r.Context(), clientID, action, platform, options)
		if err != nil {
			return err
		}
		api.WriteOK(w, out)
		return nil
	}
}

// actionOptions collects the action-specific options: the "options" object
// plus any top-level field that is not action/platform/clientId, with
// ws_reconnect's aliases folded onto their canonical names.
func actionOptions(action string, body map[string]json.RawMessage) (map[string]any, error) {
	flat := map[string]json.RawMessage{}
	if raw, ok := body["options"]; ok && string(raw) != "null" {
		var o map[string]json.RawMessage
		if json.Unmarshal(raw, &o) != nil {
			return nil, api.Unprocessable("invalid_field", "field \"options\" must be an object")
		}
		for k, v := range o {
			flat[k] = v
		}
	}
	for k, v := range body {
		switch k {
		case "action", "platform", "clientId", "client_id", "options":
			continue
		}
		// Other top-level names are options for the plugin, but a near miss of
		// a field the daemon reads (Platform, clientid, client) is a typo that
		// would otherwise be passed on silently.
		switch strings.ToLower(strings.ReplaceAll(k, "_", "")) {
		case "action", "platform", "clientid", "client", "options":
			return nil, api.Unprocessable("unknown_field", "unknown field %q; did you mean action, platform, clientId or options? (names are case-sensitive)", api.Clip(k))
		}
		flat[k] = v
	}
	if action == "ws_reconnect" {
		for k := range flat {
			if _, alias := wsAliasNames[k]; !alias {
				return nil, api.Unprocessable("unknown_field", "unknown ws_reconnect option %q; it takes disconnectMs, repeatCount and repeatIntervalMs (or their documented aliases)", api.Clip(k))
			}
		}
	}
	out := map[string]any{}
	if action == "ws_reconnect" {
		norm, err := bridgeproto.NormalizeWSReconnect(flat)
		if err != nil {
			return nil, api.Unprocessable("invalid_field", "ws_reconnect: %v", err)
		}
		for k, v := range norm {
			out[k] = v
		}
		for k := range flat {
			if _, alias := wsAliasNames[k]; alias {
				delete(flat, k)
			}
		}
	}
	for k, v := range flat {
		var x any
		if json.Unmarshal(v, &x) == nil {
			out[k] = x
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

var wsAliasNames = map[string]struct{}{
	"disconnectMs": {}, "disconnect_ms": {}, "delayMs": {}, "delay_ms": {}, "repeatCount": {}, "repeat_count": {},
	"repeatIntervalMs": {}, "repeat_interval_ms": {}, "intervalMs": {}, "interval_ms": {},
}
