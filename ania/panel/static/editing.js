/* Shared by the editing pages (clock, teams, skills, hooks, mcp, commands): JSON calls through panelFetch
   (panel.js adds the CSRF header), a message line, and building table rows without innerHTML. */
"use strict";

function labels(id) {
  var node = document.getElementById(id);
  return node ? JSON.parse(node.textContent) : {};
}

function el(tag, attrs) {
  var node = document.createElement(tag);
  var key;
  for (key in attrs || {}) {
    if (key === "text") { node.textContent = attrs[key]; }
    else if (key.slice(0, 2) === "on") { node.addEventListener(key.slice(2), attrs[key]); }
    else { node.setAttribute(key, attrs[key]); }
  }
  for (var i = 2; i < arguments.length; i++) {
    var child = arguments[i];
    if (child === null || child === undefined) { continue; }
    node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

/* One API call: resolves with the JSON answer, rejects with the server's own sentence. */
function api(method, url, body) {
  var opts = {method: method, headers: {}};
  if (body instanceof FormData) { opts.body = body; }
  else if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  return panelFetch(url, opts).then(function (resp) {
    return resp.text().then(function (text) {
      var data = {};
      try { data = text ? JSON.parse(text) : {}; } catch (e) { data = {error: text}; }
      if (!resp.ok) { throw new Error(data.error || ("HTTP " + resp.status)); }
      return data;
    });
  });
}

/* Show an outcome in the page's message line (role=status; errors get the error style). */
function say(text, isError) {
  var line = document.getElementById("edit-message");
  if (!line) { return; }
  line.textContent = text;
  line.className = isError ? "edit-message error" : "edit-message ok";
}

function failed(err) { say(err.message, true); }

function fillTable(tbodyId, rows, makeRow, emptyText, columns) {
  var tbody = document.getElementById(tbodyId);
  tbody.replaceChildren();
  if (!rows.length) {
    tbody.appendChild(el("tr", {}, el("td", {colspan: String(columns), class: "empty", text: emptyText})));
    return;
  }
  rows.forEach(function (row) { tbody.appendChild(makeRow(row)); });
}

function button(text, onclick, extra) {
  var attrs = {type: "button", text: text, onclick: onclick};
  for (var k in extra || {}) { attrs[k] = extra[k]; }
  return el("button", attrs);
}

/* "name: role" lines ⇄ members (the team form). */
function parseLines(text, sep) {
  return text.split("\n").map(function (line) { return line.trim(); }).filter(Boolean).map(function (line) {
    var at = line.indexOf(sep);
    return at < 0 ? [line, ""] : [line.slice(0, at).trim(), line.slice(at + sep.length).trim()];
  });
}
