package status

import (
	"html/template"
	"io"
)

// RefreshSeconds is how often the panel reloads itself.
const RefreshSeconds = 5

var panel = template.Must(template.New("panel").Funcs(template.FuncMap{
	"refresh": func() int { return RefreshSeconds },
	"plural":  Plural,
	"ago":     Ago,
	"human":   HumanMs,
	"join":    joinOr,
	"uptime":  uptime,
	"until":   Until,
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<noscript><meta http-equiv="refresh" content="{{refresh}}"></noscript>
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svcd — {{.Mode}}</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:52rem;padding:0 1rem;color:#1d232a}
h1{font-size:1.35rem;margin:0 0 .25rem}
h2{font-size:1.05rem;margin:1.6rem 0 .2rem;color:#24292f}
.sub{color:#57606a;margin:0 0 1rem}
.mode{display:inline-block;padding:.15rem .6rem;border-radius:1rem;font-weight:600;color:#fff}
.running{background:#1a7f37}.paused{background:#9a6700}.draining{background:#0969da}.unknown{background:#cf222e}
table{border-collapse:collapse;width:100%;margin:.4rem 0}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #d0d7de;vertical-align:top}
th{width:14rem;color:#57606a;font-weight:500}
.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}.muted{color:#57606a}
.down{background:#ffebe9;border:1px solid #cf222e;padding:.75rem;border-radius:.4rem}
.hint{background:#fff8c5;border:1px solid #d4a72c;padding:.5rem .75rem;border-radius:.4rem}
footer{color:#57606a;font-size:.85rem;margin-top:1.5rem}
#pair form{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end}
#pair label{display:flex;flex-direction:column;font-size:.85rem;color:#57606a}
#pair input,#pair select,#pair button{font:inherit;padding:.3rem .5rem}
#pair-code{font:600 1.6rem/1.2 ui-monospace,monospace;letter-spacing:.1em}
</style>
</head>
<body>
<div id="live">
<h1>svcd status <span class="mode {{.Mode}}">{{.Mode}}</span></h1>
{{$now := .GeneratedAt}}
{{if .Version}}<p class="sub">version {{.Version}}{{if .StartedAt}} · up {{human .UptimeMs}} (since {{.StartedAt.Format "2006-01-02 15:04:05 UTC"}}){{end}}</p>{{end}}
{{if ne .Source "local"}}<p class="sub">read-only status wrapper of the daemon at {{.Source}}</p>{{end}}
{{if not .Reachable}}<p class="down"><strong>The daemon is not reachable.</strong> {{.Error}}</p>{{end}}
<h2>System</h2>
<table>
<tr><th>Automation mode</th><td>{{.Mode}}</td></tr>
{{if .Reachable}}
<tr><th>Set by</th><td>{{if .RequestedBy}}{{.RequestedBy}}{{else}}—{{end}}</td></tr>
<tr><th>Reason</th><td>{{if .Reason}}{{.Reason}}{{else}}—{{end}}</td></tr>
<tr><th>Since</th><td>{{if .UpdatedAt}}{{.UpdatedAt.Format "2006-01-02 15:04:05 UTC"}}{{else}}start-up default{{end}}</td></tr>
<tr><th>Leader</th><td>{{if .Leader.NodeID}}{{.Leader.NodeID}}{{if .Leader.Self}} ({{template "self" $}}){{end}}{{else}}none known{{end}}</td></tr>
<tr><th>Queue</th><td>{{.Queue.Pending}} pending, {{.Queue.Running}} running</td></tr>
<tr><th>Active runs</th><td>{{.ActiveRunCount}}</td></tr>
{{end}}
{{if .SandboxLevel}}<tr><th>Exec sandbox</th><td>{{.SandboxLevel}}</td></tr>{{end}}
</table>
{{with .Browser}}
<h2>Browser clients</h2>
<p class="sub">{{plural .Connected "client"}} connected · pairing by {{.PairingMode}}{{if .Refused}} · <span class="bad">{{plural .Refused "hello"}} refused at pairing</span>{{if .RefusedLast}} (last: {{.RefusedLast}}){{end}}{{end}}</p>
{{if not .Clients}}<p class="hint">No browser has connected yet. Pair one: <code>svcctl browser pair</code>, then enter the code in the extension's options page.</p>{{end}}
<table>
{{range .Clients}}<tr><th>Browser {{.ClientID}}</th><td>{{if .Connected}}<span class="ok">connected</span>{{else}}<span class="muted">disconnected</span>{{end}}{{if .Browser}} · {{.Browser}}{{end}} · {{if .Paired}}paired{{else}}shared token{{end}} · scopes {{join .Scopes "none"}} · platforms {{join .Platforms "none yet"}} · last seen {{ago $now .LastSeenAt}}</td></tr>
{{end}}
</table>
{{end}}
{{if .Cluster}}
<h2>Cluster</h2>
<table>
{{range .Cluster}}<tr><th>Node {{.NodeID}}{{if .Self}} ({{template "self" $}}){{end}}</th><td>{{if eq .Role "leader"}}<strong>leader</strong>{{else}}{{.Role}}{{end}}{{if .APIAddr}} · {{.APIAddr}}{{end}}{{if .LagEntries}} · lag {{plural .LagEntries "entry"}}{{end}}{{if .LastContact}} · leader last heard {{ago $now .LastContact}}{{end}}</td></tr>
{{end}}
</table>
{{end}}
{{if .Workers}}
<h2>Workers</h2>
<table>
{{range .Workers}}<tr><th>Worker {{.Name}}</th><td>{{if eq .State "running"}}<span class="ok">{{.State}}</span>{{else if eq .State "failed"}}<span class="bad">{{.State}}</span>{{else}}{{.State}}{{end}}{{if .Pid}} · pid {{.Pid}}{{end}}{{if and .StartedAt (eq .State "running")}} · up {{uptime $now .StartedAt}}{{end}} · {{plural .Restarts "restart"}}{{with .LastExit}} · last exit {{if .Signal}}{{.Signal}}{{else}}code {{.Code}}{{end}} ({{ago $now .At}}{{if .Reason}}, {{.Reason}}{{end}}){{end}}{{if and .LastError (ne .State "running")}} · <span class="bad">{{.LastError}}</span>{{end}}{{if .NextRetryAt}} · retries {{until $now .NextRetryAt}}{{end}}</td></tr>
{{end}}
</table>
{{end}}
{{if .Convs}}
<h2>Conversations</h2>
<table>
{{range .Convs}}<tr><th>Conversation {{.ID}}</th><td>{{.AutomationStatus}} · {{.ExecutionState}}{{if .PauseReason}} · {{.PauseReason}}{{end}}{{if .ClientLoop}} · loop {{.ClientLoop}}{{end}}</td></tr>
{{end}}
</table>
{{end}}
{{if .Tasks}}
<h2>Recent tasks</h2>
<table>
{{range .Tasks}}<tr><th>Task {{.ID}}</th><td>{{.Kind}} · {{.Status}}</td></tr>
{{end}}
</table>
{{end}}
</div>
{{if eq .Source "local"}}{{template "pair"}}{{end}}
<footer>Source: {{.Source}} · generated {{.GeneratedAt.Format "2006-01-02 15:04:05 UTC"}} · refreshes every {{refresh}} s · JSON at <a href="/v1/status">/v1/status</a></footer>
{{if eq .Source "local"}}{{template "pairjs"}}{{else}}<script>setTimeout(function(){location.reload()},{{refresh}}*1000)</script>{{end}}
</body>
</html>
{{define "self"}}{{if eq .Source "local"}}this node{{else}}the node this wrapper reads{{end}}{{end}}
` + pairSection))

// RenderHTML writes the status panel for snap.
func RenderHTML(w io.Writer, snap Snapshot) error {
	return panel.Execute(w, snap)
}
