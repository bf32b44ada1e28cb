// Sessions: the paged, searchable list from /api/sessions, and pruning (POST /api/sessions/prune).
"use strict";

async function loadSessions(page) {
  const params = formParams(document.getElementById("search"));
  params.set("page", page || 1);
  const data = await getOrFlash("/api/sessions?" + params.toString());
  if (data === null) return;
  const body = document.getElementById("rows");
  body.replaceChildren();
  if (!data.items.length) body.append(emptyRow(3, L("no_sessions")));
  for (const s of data.items) {
    body.append(el("tr", {},
      el("td", { class: "mono" }, el("a", { href: "/sessions/show?key=" + encodeURIComponent(s.key) }, s.key)),
      el("td", { class: "num" }, fmtNumber(s.checkpoints)), el("td", {}, fmtIso(s.at))));
  }
  pagerInto(document.getElementById("pager"), data, loadSessions);
}

async function prune(dryRun) {
  const age = document.querySelector('#prune input[name="older_than"]').value.trim();
  if (!dryRun && !window.confirm(L("confirm_prune", { age: age }))) return;
  const out = document.getElementById("prune-result");
  try {
    const r = await panelJSON("/api/sessions/prune", { method: "POST", json: { older_than: age, dry_run: dryRun } });
    out.textContent = L("pruned", { verb: L(dryRun ? "would_delete" : "deleted"), sessions: r.sessions_deleted.length,
      checkpoints: r.checkpoints, rows: r.query_rows });
    if (!dryRun) loadSessions(1);
  } catch (e) {
    out.textContent = L("common.failed", { error: e.message });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("search").addEventListener("submit", (ev) => { ev.preventDefault(); loadSessions(1); });
  document.getElementById("prune").addEventListener("submit", (ev) => { ev.preventDefault(); prune(false); });
  document.getElementById("prune-dry").addEventListener("click", () => prune(true));
  loadSessions(1);
});
