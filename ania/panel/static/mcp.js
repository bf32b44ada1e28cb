/* The MCP page: /api/mcp lists the servers (state, tools, last error); add (POST, the server must answer
   first), reconnect, delete. Env and header values are sent once and never shown back. */
"use strict";
(function () {
  var L = labels("mcp-labels");

  function load() {
    return api("GET", "/api/mcp?size=200").then(function (data) {
      fillTable("mcp-rows", data.items, row, L.none, 6);
    }).catch(failed);
  }

  function call(method, url) {
    say(L.working);
    return api(method, url).then(function (data) { say(data.message); return load(); })
      .catch(function (err) { failed(err); return load(); });
  }

  function row(s) {
    var base = "/api/mcp/" + encodeURIComponent(s.name);
    return el("tr", {"data-server": s.name},
      el("td", {text: s.name}), el("td", {text: s.state}), el("td", {text: String(s.tools)}),
      el("td", {class: "clip", text: s.target}), el("td", {class: "clip", text: s.error}),
      el("td", {class: "actions"},
        button(L.reconnect, function () { call("POST", base + "/reconnect"); }, {"data-action": "reconnect"}),
        button(L["delete"], function () {
          if (window.confirm(L.confirm_delete)) { call("DELETE", base); }
        }, {"data-action": "delete", class: "danger"})));
  }

  function pairs(text) {
    var out = {};
    parseLines(text, "=").forEach(function (p) { out[p[0]] = p[1]; });
    return out;
  }

  document.getElementById("mcp-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var f = ev.target, v = f.elements;
    var body = {name: v.name.value.trim()};
    // A URL with the default "stdio" left selected means its default transport (streamable_http).
    if (!(v.url.value.trim() && !v.command.value.trim() && v.transport.value === "stdio")) {
      body.transport = v.transport.value;
    }
    if (v.command.value.trim()) {
      body.command = v.command.value.trim();
      body.args = v.args.value.split("\n").map(function (a) { return a.trim(); }).filter(Boolean);
      if (v.env.value.trim()) { body.env = pairs(v.env.value); }
    }
    if (v.url.value.trim()) {
      body.url = v.url.value.trim();
      if (v.headers.value.trim()) { body.headers = pairs(v.headers.value); }
    }
    say(L.working);
    api("POST", "/api/mcp", body).then(function (data) { say(data.message); f.reset(); return load(); })
      .catch(failed);
  });

  poll(load, 10000);  // a server that drops and comes back shows it without a reload
}());
