// Shared by the data pages (query log, sessions, knowledge, memory): labels, paging, small formatters.
//   L(key, values)            the page's label (from <script type="application/json" id="labels">), {name} filled in
//   pagerInto(box, data, go)  "Previous / Page x of y / Next" under a paged API answer; go(page) loads a page
//   formParams(form)          the form's non-empty fields as URLSearchParams
//   fmtIso(text)              an ISO time in the browser's local time
//   getOrFlash(url)           a GET's JSON, or null after flashing why it failed
"use strict";

let LABELS = null;

function L(key, values) {
  if (LABELS === null) {
    const node = document.getElementById("labels");
    LABELS = node ? JSON.parse(node.textContent) : {};
  }
  let text = LABELS[key] || key;
  for (const [k, v] of Object.entries(values || {})) text = text.split("{" + k + "}").join(String(v));
  return text;
}

function pagerInto(box, data, go) {
  box.replaceChildren();
  const pages = Math.max(1, Math.ceil(data.total / data.size));
  box.append(
    el("button", { class: "secondary", type: "button", disabled: data.page <= 1, onclick: () => go(data.page - 1) },
      L("common.prev")),
    el("span", { class: "muted" }, L("common.page_of", { page: data.page, pages: pages, total: data.total })),
    el("button", { class: "secondary", type: "button", disabled: data.page >= pages, onclick: () => go(data.page + 1) },
      L("common.next")));
}

function formParams(form) {
  const params = new URLSearchParams();
  for (const [k, v] of new FormData(form).entries()) {
    if (typeof v === "string" && v.trim() !== "") params.set(k, v.trim());
  }
  return params;
}

function fmtIso(text) {
  return text ? fmtTime(Date.parse(text) / 1000) : "";
}

function emptyRow(cols, text) {
  return el("tr", {}, el("td", { colspan: cols, class: "empty" }, text));
}

// The JSON of a GET, or null after a flash saying why it failed.
async function getOrFlash(url) {
  try {
    return await panelJSON(url);
  } catch (e) {
    flash(L("common.failed", { error: e.message }), true);
    return null;
  }
}
