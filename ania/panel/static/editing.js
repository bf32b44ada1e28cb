/* Shared by the editing pages (clock, teams, skills, hooks, mcp, commands), on top of panel.js (panelJSON,
   flash, el): one API call, the labels a page's template gives, and filling a table's body. */
"use strict";

function labels(id) {
  const node = document.getElementById(id);
  return node ? JSON.parse(node.textContent) : {};
}

/* One API call: resolves with the JSON answer, rejects with the server's own sentence. */
function api(method, url, body) {
  const opts = {method: method};
  if (body instanceof FormData) opts.body = body;
  else if (body !== undefined) opts.json = body;
  return panelJSON(url, opts);
}

function say(text) { flash(text, false); }
function failed(err) { flash(err.message, true); }

function fillTable(tbodyId, rows, makeRow, emptyText, columns) {
  const tbody = document.getElementById(tbodyId);
  tbody.replaceChildren();
  if (!rows.length) {
    tbody.append(el("tr", {}, el("td", {colspan: columns, class: "empty", text: emptyText})));
    return;
  }
  for (const row of rows) tbody.append(makeRow(row));
}

function button(text, onclick, attrs) {
  return el("button", Object.assign({type: "button", class: "secondary", text: text, onclick: onclick}, attrs || {}));
}

/* "name: role" or "KEY=VALUE" lines → [[left, right], ...] (blank lines skipped). */
function parseLines(text, sep) {
  return text.split("\n").map((line) => line.trim()).filter(Boolean).map((line) => {
    const at = line.indexOf(sep);
    return at < 0 ? [line, ""] : [line.slice(0, at).trim(), line.slice(at + sep.length).trim()];
  });
}

/* Previous / "page of pages" / next under a table the server pages; `go(n)` loads page n. */
function pager(id, data, go) {
  const box = document.getElementById(id);
  box.replaceChildren();
  const pages = Math.max(1, Math.ceil(data.total / data.size));
  if (data.page > pages) { go(pages); return; }  // the last row of the last page was deleted
  if (pages <= 1) return;
  box.append(button("‹", () => go(data.page - 1), {disabled: data.page <= 1, "aria-label": "previous page"}),
             el("span", {text: data.page + " / " + pages}),
             button("›", () => go(data.page + 1), {disabled: data.page >= pages, "aria-label": "next page"}));
}
