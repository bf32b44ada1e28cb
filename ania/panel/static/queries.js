// The query log: the filtered, paged list from /api/queries, a row's detail from /api/queries/{id}, and its replay.
"use strict";

const KNOWN = new Set(["id", "started", "ended", "session", "sender", "trigger", "input", "status", "tokens",
  "total_tokens", "duration_ms", "calls", "call_count", "thread", "checkpoint", "reply", "recalled"]);
const STATUS_CLASS = { success: "ok", error: "bad", timeout: "bad", interrupted: "warn", quota: "warn", stopped: "warn" };

async function loadQueries(page) {
  const params = formParams(document.getElementById("filters"));
  params.set("page", page || 1);
  const body = document.getElementById("rows");
  const data = await getOrFlash("/api/queries?" + params.toString());
  if (data === null) return;
  body.replaceChildren();
  if (!data.items.length) body.append(emptyRow(9, L("no_rows")));
  for (const r of data.items) {
    const open = el("a", { href: "#q" + r.id, onclick: (ev) => { ev.preventDefault(); showQuery(r.id); } }, String(r.id));
    body.append(el("tr", { "data-id": r.id },
      el("td", {}, open), el("td", {}, fmtTime(r.started)), el("td", { class: "mono" }, r.session),
      el("td", {}, r.sender || ""), el("td", {}, el("span", { class: "badge " + (STATUS_CLASS[r.status] || "") }, r.status)),
      el("td", { class: "num" }, fmtNumber(r.total_tokens)), el("td", { class: "num" }, fmtNumber(r.duration_ms)),
      el("td", {}, (r.tools || []).join(", ")), el("td", {}, r.input || "")));
  }
  pagerInto(document.getElementById("pager"), data, loadQueries);
}

function field(name, value) {
  return el("div", {}, el("strong", {}, name + ": "), value);
}

function passages(list) {
  // Each passage recalled into the turn (F3): source, id, title, base, score and size, as `ania logs show` has them.
  const box = el("div", {}, el("h2", {}, L("passages")));
  for (const p of list) {
    if (p && typeof p === "object") {
      const score = typeof p.score === "number" ? "score " + p.score.toFixed(2) : "";
      const size = p.runes !== undefined ? p.runes + " chars" : "";
      const head = [p.source, p.id || p.doc, p.title ? "\u201c" + p.title + "\u201d" : "", p.scope, score, size];
      box.append(el("div", { class: "passage mono" }, head.filter(Boolean).join(" \u00b7 ")));
      if (p.text !== undefined) box.append(el("pre", {}, String(p.text)));
    } else {
      box.append(el("pre", {}, String(p)));
    }
  }
  return box;
}

async function showQuery(id) {
  const box = document.getElementById("detail");
  const r = await getOrFlash("/api/queries/" + id);
  if (r === null) return;
  box.replaceChildren(
    el("h2", {}, L("detail", { id: r.id })),
    field(L("status"), el("span", { class: "badge " + (STATUS_CLASS[r.status] || "") }, r.status)),
    field(L("session"), r.session), field(L("sender"), r.sender || "-"), field(L("trigger"), r.trigger || "-"),
    field(L("time"), fmtTime(r.started) + " (" + fmtNumber(r.duration_ms) + " ms)"),
    field(L("checkpoint"), r.checkpoint || "-"),
    el("h2", {}, L("input")), el("pre", {}, r.input || ""),
    el("h2", {}, L("reply")), el("pre", {}, r.reply || "-"),
    el("h2", {}, L("token_detail")), el("pre", {}, JSON.stringify(r.tokens || {}, null, 1)));
  const calls = r.calls || [];
  box.append(el("h2", {}, L("tool_calls", { n: r.call_count || 0, shown: calls.length })));
  const table = el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, L("call_name")), el("th", {}, L("call_args")),
    el("th", {}, L("call_status")))));
  const rows = el("tbody", {});
  for (const c of calls) {
    rows.append(el("tr", {}, el("td", { class: "mono" }, c.name || ""), el("td", { class: "mono" }, String(c.args || "")),
      el("td", {}, c.status || "")));
  }
  table.append(rows);
  box.append(el("div", { class: "table-wrap" }, table));
  if (Array.isArray(r.recalled) && r.recalled.length) box.append(passages(r.recalled));
  const extra = Object.keys(r).filter((k) => !KNOWN.has(k) && r[k] !== null && r[k] !== "");
  if (extra.length) {
    box.append(el("h2", {}, L("extra")));
    for (const k of extra) box.append(field(k, typeof r[k] === "object" ? JSON.stringify(r[k]) : String(r[k])));
  }
  const out = el("div", { id: "replay-result" });
  const button = el("button", { type: "button", id: "replay", disabled: !r.checkpoint }, L("replay"));
  button.addEventListener("click", async () => {
    button.disabled = true;
    out.replaceChildren(el("p", { class: "muted" }, L("replaying")));
    try {
      const res = await panelJSON("/api/queries/" + r.id + "/replay", { method: "POST" });
      out.replaceChildren(el("p", {}, L("replayed", { scratch: res.scratch, status: res.status })),
        el("pre", {}, res.messages.join("\n")));
    } catch (e) {
      out.replaceChildren(el("p", { class: "error" }, L("common.failed", { error: e.message })));
    }
    button.disabled = false;
  });
  box.append(el("div", { class: "row" }, button, r.checkpoint ? "" : el("span", { class: "muted" }, L("no_checkpoint"))),
    out, el("p", {}, el("button", { type: "button", class: "secondary", onclick: () => { box.hidden = true; } }, L("close"))));
  box.hidden = false;
  box.scrollIntoView({ behavior: "smooth" });
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("filters");
  form.addEventListener("submit", (ev) => { ev.preventDefault(); loadQueries(1); });
  form.addEventListener("reset", () => setTimeout(() => loadQueries(1), 0));
  loadQueries(1);
});
