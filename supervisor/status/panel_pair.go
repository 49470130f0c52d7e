package status

// pairSection is the panel's "Pair a browser" control (issue 25 §1: "a
// button on the panel, token-guarded"). The panel itself stays readable
// without the token and never embeds it: the operator pastes the shared
// token into a password field, and the button calls the same token-guarded
// POST /v1/browser/pairings that svcctl browser pair calls.
//
// The token lives only in that field (page memory): not in sessionStorage,
// not in a cookie. sessionStorage would survive a reload but is readable by
// any script of the daemon's origin for the tab's life, and the only reload
// the panel does is its own refresh, which the script below does in place
// (it swaps the #live part, so the field and a shown code stay). Without
// JavaScript the page falls back to the meta refresh and has no button.
//
// Server data (code, address, error messages) is put in the page with
// textContent, never as HTML.
const pairSection = `
{{define "pair"}}
<section id="pair">
<h2>Pair a browser</h2>
<p class="sub">Issues a single-use code for the extension's options page (Pairing code). Needs the daemon's shared token, which stays in this page's memory only: it is not stored, and closing the tab forgets it.</p>
<form id="pair-form" autocomplete="off">
<label for="pair-token">Shared token<input id="pair-token" name="token" type="password" autocomplete="off" spellcheck="false" size="30"></label>
<label for="pair-scope">Scopes<select id="pair-scope" name="scope"><option value="bridge" selected>bridge (default)</option><option value="host-ops">bridge + host-ops</option></select></label>
<button id="pair-button" type="submit">Pair a browser</button>
</form>
<div id="pair-result" role="status" aria-live="polite"></div>
</section>
{{end}}
{{define "pairjs"}}
<script>
(function () {
  "use strict";
  var every = {{refresh}} * 1000;
  // Refresh the live part in place: a full reload would drop the token
  // field and a code the operator is still copying.
  function refresh() {
    fetch(location.pathname, {cache: "no-store", credentials: "omit"})
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live");
        if (fresh) {
          var live = document.getElementById("live");
          live.replaceChildren.apply(live, Array.from(fresh.childNodes, function (n) { return document.importNode(n, true); }));
          document.title = doc.title;
        }
      })
      .catch(function () {})
      .finally(function () { setTimeout(refresh, every); });
  }
  setTimeout(refresh, every);

  var form = document.getElementById("pair-form");
  var out = document.getElementById("pair-result");
  var button = document.getElementById("pair-button");
  var ticker = null;
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text != null) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function row(label, value, id) {
    var p = el("p");
    p.appendChild(el("span", label + ": ", "muted"));
    var v = el("code", value);
    if (id) v.id = id;
    p.appendChild(v);
    return p;
  }
  function left(ms) {
    if (ms <= 0) return "expired";
    var s = Math.round(ms / 1000);
    return "in " + (s >= 60 ? Math.floor(s / 60) + " min " : "") + (s % 60) + " s";
  }
  function fail(msg) {
    clearInterval(ticker);
    out.className = "down";
    out.replaceChildren(el("strong", msg));
  }
  function showCode(d) {
    clearInterval(ticker);
    out.className = "hint";
    var expires = new Date(d.expires_at);
    var code = el("div", d.code);
    code.id = "pair-code";
    out.replaceChildren(
      el("p", "Enter this code in the extension's options page (Pairing code). It works once."),
      code,
      row("Expires", "", "pair-expires"),
      row("WebSocket address", d.ws_url, "pair-ws"),
      row("Scopes", (d.scopes || []).join(", "), "pair-scopes"));
    function tick() {
      var v = document.getElementById("pair-expires");
      if (v) v.textContent = expires.toLocaleTimeString() + " (" + left(expires - Date.now()) + ")";
    }
    tick();
    ticker = setInterval(tick, 1000);
  }
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var token = document.getElementById("pair-token").value.trim();
    var scope = document.getElementById("pair-scope").value;
    var headers = {"Content-Type": "application/json"};
    if (token) headers.Authorization = "Bearer " + token;
    button.disabled = true;
    fetch("/v1/browser/pairings", {method: "POST", headers: headers, credentials: "omit", cache: "no-store",
      body: JSON.stringify({scopes: scope === "host-ops" ? ["host-ops"] : []})})
      .then(function (r) {
        return r.json().catch(function () { return null; }).then(function (body) {
          if (r.ok && body && body.ok) { showCode(body.data); return; }
          var msg = (body && body.error && body.error.message) || r.statusText;
          if (r.status === 401) {
            fail(token ? "401: the daemon refused this token (" + msg + "). Paste the daemon's shared token (SVC_SHARED_TOKEN, shared_token in the config, or the token file in its data dir)."
                       : "401: paste the daemon's shared token first; issuing a pairing code needs it.");
          } else if (r.status === 429) {
            fail("429: too many requests. " + msg);
          } else {
            fail(r.status + ": could not issue a code. " + msg);
          }
        });
      })
      .catch(function (e) { fail("The daemon did not answer: " + e.message); })
      .finally(function () { button.disabled = false; });
  });
})();
</script>
{{end}}
`
