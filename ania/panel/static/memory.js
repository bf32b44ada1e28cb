// Memory: the chats that have memories, one chat's memories paged (GET /api/memory), delete (DELETE /api/memory/{id}).
"use strict";

let currentPage = 1;

function fillChats(list, chosen) {
  const select = document.getElementById("chat");
  select.replaceChildren(el("option", { value: "" }, list.length ? L("choose") : L("no_chats")));
  for (const c of list) {
    select.append(el("option", { value: c.session, selected: c.session === chosen },
      c.session + " · " + L("count", { n: c.memories })));
  }
}

async function loadMemories(page) {
  currentPage = page || 1;
  const select = document.getElementById("chat");
  const chosen = select.value || select.getAttribute("data-initial") || "";
  const data = await getOrFlash("/api/memory?session=" + encodeURIComponent(chosen) + "&page=" + currentPage);
  if (data === null) return;
  if (!chosen && data.sessions.length) {  // no chat asked for: show the first one's memories
    fillChats(data.sessions, data.sessions[0].session);
    return loadMemories(1);
  }
  fillChats(data.sessions, chosen);
  const body = document.getElementById("rows");
  body.replaceChildren();
  if (!data.items.length) body.append(emptyRow(4, chosen ? L("no_memories") : L("choose")));
  for (const m of data.items) {
    body.append(el("tr", { "data-id": m.id }, el("td", { class: "mono" }, m.id), el("td", {}, m.text),
      el("td", {}, fmtTime(m.added)),
      el("td", {}, el("button", { type: "button", class: "danger", onclick: () => forget(m) }, L("common.delete")))));
  }
  pagerInto(document.getElementById("pager"), data, loadMemories);
}

async function forget(m) {
  if (!window.confirm(L("confirm_delete", { name: m.id }))) return;
  try {
    await panelJSON("/api/memory/" + encodeURIComponent(m.id), { method: "DELETE" });
    flash(L("deleted", { id: m.id }));
  } catch (e) {
    flash(L("common.failed", { error: e.message }), true);
  }
  loadMemories(currentPage);
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("chat").addEventListener("change", () => loadMemories(1));
  loadMemories(1);
});
