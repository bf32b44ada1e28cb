// Knowledge: documents of a base (GET /api/knowledge), add to the global base (POST), delete (DELETE
// /api/knowledge/{id}), prune a chat's base (DELETE /api/knowledge/scope/{scope}), search (GET /api/knowledge/search).
"use strict";

let currentPage = 1;

function scope() {
  return document.getElementById("scope").value || "global";
}

function fillScopes(list) {
  const select = document.getElementById("scope");
  const chosen = select.value || select.getAttribute("data-initial") || "global";
  const names = new Set(["global", chosen, ...list.map((s) => s.scope)]);
  select.replaceChildren();
  for (const name of names) {
    const found = list.find((s) => s.scope === name);
    const text = (name === "global" ? L("global") : name) + (found ? " (" + found.documents + ")" : "");
    select.append(el("option", { value: name, selected: name === chosen }, text));
  }
  const chat = chosen !== "global";
  document.getElementById("prune-scope").hidden = !chat;
  document.getElementById("chat-note").hidden = !chat;
}

async function loadDocs(page) {
  currentPage = page || 1;
  const data = await getOrFlash("/api/knowledge?scope=" + encodeURIComponent(scope()) + "&page=" + currentPage);
  if (data === null) return;
  fillScopes(data.scopes);
  const body = document.getElementById("rows");
  body.replaceChildren();
  if (!data.items.length) body.append(emptyRow(6, L("no_docs")));
  for (const d of data.items) {
    body.append(el("tr", { "data-id": d.id },
      el("td", { class: "mono" }, d.id), el("td", {}, d.title), el("td", { class: "num" }, d.chunks),
      el("td", { class: "num" }, fmtNumber(d.runes)), el("td", {}, fmtTime(d.added)),
      el("td", {}, el("button", { type: "button", class: "danger", onclick: () => removeDoc(d) }, L("common.delete")))));
  }
  pagerInto(document.getElementById("pager"), data, loadDocs);
}

async function removeDoc(d) {
  if (!window.confirm(L("confirm_delete", { name: d.title + " (" + d.id + ")" }))) return;
  try {
    await panelJSON("/api/knowledge/" + encodeURIComponent(d.id), { method: "DELETE" });
    flash(L("deleted", { id: d.id }));
  } catch (e) {
    flash(L("common.failed", { error: e.message }), true);
  }
  loadDocs(currentPage);
}

async function pruneScope() {
  const name = scope();
  if (!window.confirm(L("confirm_prune", { scope: name }))) return;
  try {
    const r = await panelJSON("/api/knowledge/scope/" + encodeURIComponent(name), { method: "DELETE" });
    flash(L("pruned", { n: r.deleted.length, scope: name }));
  } catch (e) {
    flash(L("common.failed", { error: e.message }), true);
  }
  document.getElementById("scope").value = "global";
  loadDocs(1);
}

async function search(ev) {
  ev.preventDefault();
  const params = formParams(ev.target);
  params.set("scope", scope());
  const box = document.getElementById("hits");
  try {
    const r = await panelJSON("/api/knowledge/search?" + params.toString());
    box.replaceChildren();
    if (!r.items.length) box.append(el("p", { class: "muted" }, L("no_results")));
    for (const h of r.items) {
      box.append(el("div", { class: "hit" },
        el("div", {}, el("strong", {}, h.title), " ", el("span", { class: "muted mono" },
          h.doc + " #" + h.pos + " · " + h.scope + " · " + L("score") + " " + h.score)),
        el("pre", {}, h.text)));
    }
  } catch (e) {
    box.replaceChildren(el("p", { class: "error" }, e.message));
  }
}

async function add(ev) {
  ev.preventDefault();
  const form = ev.target;
  const body = { title: form.title.value, content: form.content.value, scope: "global" };
  try {
    const r = await panelJSON("/api/knowledge", { method: "POST", json: body });
    flash(r.duplicate ? L("duplicate", { id: r.document.id }) : L("added", { id: r.document.id, chunks: r.document.chunks }));
    form.reset();
    document.getElementById("scope").value = "global";
    loadDocs(1);
  } catch (e) {
    flash(L("common.failed", { error: e.message }), true);
  }
}

function loadFile(ev) {
  const file = ev.target.files[0];
  if (!file) return;
  const form = document.getElementById("add");
  if (!form.title.value) form.title.value = file.name;
  file.text().then((text) => { form.content.value = text; });
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("scope").addEventListener("change", () => loadDocs(1));
  document.getElementById("prune-scope").addEventListener("click", pruneScope);
  document.getElementById("search").addEventListener("submit", search);
  document.getElementById("add").addEventListener("submit", add);
  document.getElementById("file").addEventListener("change", loadFile);
  loadDocs(1);
});
