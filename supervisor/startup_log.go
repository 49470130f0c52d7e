package supervisor

import (
	"net"
	"strconv"

	"github.com/svcd/svcd/supervisor/bridge"
)

// panelURL is where a person opens the status panel on this listener. An
// unspecified bind address (0.0.0.0, ::) is reached locally through loopback.
func panelURL(addr net.Addr) string {
	host, port := "127.0.0.1", ""
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
		if !tcp.IP.IsUnspecified() {
			host = tcp.IP.String()
		}
	} else if h, p, err := net.SplitHostPort(addr.String()); err == nil {
		host, port = h, p
	}
	return "http://" + net.JoinHostPort(host, port) + PanelPath
}

// logPanel is the start-up line a new user reads: where the panel is and,
// while no browser holds a credential, how to pair one.
func (s *Server) logPanel(addr net.Addr) {
	s.log.Info("status panel: open " + panelURL(addr))
	if s.browser == nil || s.browser.hub == nil {
		return
	}
	m := s.browser.hub.ReadModel(bridge.Filter{}, bridge.RelayInfo{})
	if m.Pairing.Mode != "codes" {
		return // browser_pairing = "token": the extension takes the shared token
	}
	for _, c := range m.Clients {
		if c.Paired {
			return
		}
	}
	s.log.Info("no browser is paired yet: run `svcctl browser pair` and enter the code in the extension's options page (docs/extension.md)")
}
