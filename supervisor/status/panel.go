package status

import (
	"html/template"
	"io"
)

// RefreshSeconds is how often the panel reloads itself.
const RefreshSeconds = 5

var panel = template.Must(template.New("panel").Funcs(template.FuncMap{
	"refresh": func() int { return RefreshSeconds },
}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="{{refresh}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svcd — {{.Mode}}</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:46rem;padding:0 1rem;color:#1d232a}
h1{font-size:1.35rem;margin:0 0 1rem}
.mode{display:inline-block;padding:.15rem .6rem;border-radius:1rem;font-weight:600;color:#fff}
.running{background:#1a7f37}.paused{background:#9a6700}.draining{background:#0969da}.unknown{background:#cf222e}
table{border-collapse:collapse;width:100%;margin:1rem 0}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #d0d7de;vertical-align:top}
th{width:11rem;color:#57606a;font-weight:500}
.down{background:#ffebe9;border:1px solid #cf222e;padding:.75rem;border-radius:.4rem}
footer{color:#57606a;font-size:.85rem}
</style>
</head>
<body>
<h1>svcd status <span class="mode {{.Mode}}">{{.Mode}}</span></h1>
{{if not .Reachable}}<p class="down"><strong>The daemon is not reachable.</strong> {{.Error}}</p>{{end}}
<table>
<tr><th>Automation mode</th><td>{{.Mode}}</td></tr>
{{if .Reachable}}
<tr><th>Set by</th><td>{{if .RequestedBy}}{{.RequestedBy}}{{else}}—{{end}}</td></tr>
<tr><th>Reason</th><td>{{if .Reason}}{{.Reason}}{{else}}—{{end}}</td></tr>
<tr><th>Since</th><td>{{if .UpdatedAt}}{{.UpdatedAt.Format "2006-01-02 15:04:05 UTC"}}{{else}}start-up default{{end}}</td></tr>
<tr><th>Leader</th><td>{{if .Leader.NodeID}}{{.Leader.NodeID}}{{if .Leader.Self}} (this node){{end}}{{else}}none known{{end}}</td></tr>
<tr><th>Queue</th><td>{{.Queue.Pending}} pending, {{.Queue.Running}} running</td></tr>
<tr><th>Active runs</th><td>{{.ActiveRuns}}</td></tr>
{{end}}
{{range .Workers}}<tr><th>Worker {{.Name}}</th><td>{{.State}}{{if .Restarts}} ({{.Restarts}} restarts){{end}}</td></tr>
{{end}}
{{range .Cluster}}<tr><th>Node {{.NodeID}}{{if .Self}} (this node){{end}}</th><td>{{.Role}}{{if .APIAddr}} · {{.APIAddr}}{{end}}</td></tr>
{{end}}
{{range .Convs}}<tr><th>Conversation {{.ID}}</th><td>{{.AutomationStatus}} · {{.ExecutionState}}{{if .PauseReason}} · {{.PauseReason}}{{end}}{{if .ClientLoop}} · loop {{.ClientLoop}}{{end}}</td></tr>
{{end}}
{{range .Tasks}}<tr><th>Task {{.ID}}</th><td>{{.Kind}} · {{.Status}}</td></tr>
{{end}}
</table>
<footer>Source: {{.Source}} · generated {{.GeneratedAt.Format "2006-01-02 15:04:05 UTC"}} · refreshes every {{refresh}} s · JSON at <a href="/v1/status">/v1/status</a></footer>
</body>
</html>
`))

// RenderHTML writes the status panel for snap.
func RenderHTML(w io.Writer, snap Snapshot) error {
	return panel.Execute(w, snap)
}
