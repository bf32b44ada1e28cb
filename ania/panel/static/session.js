// One session's whole conversation (GET /api/sessions/{key}), paged: messages, tool calls, images, each
// compaction where it happened; fork or replay from the step that wrote a message.
"use strict";

const KEY = document.getElementById("session").getAttribute("data-key");

function textOf(content) {
  if (typeof content === "string") return [content, []];
  const texts = [];
  const images = [];
  for (const block of content || []) {
    if (typeof block === "string") texts.push(block);
    else if (block && block.type === "text") texts.push(String(block.text || ""));
    else if (block && block.type === "image_url") {
      const url = typeof block.image_url === "string" ? block.image_url : (block.image_url || {}).url;
      images.push(String(url || ""));
    } else if (block) texts.push("[" + String(block.type || "attachment") + "]");
  }
  return [texts.join("\n"), images];
}

function imageNode(url) {
  // Only images carried in the message itself are shown; a remote address is named, never loaded.
  if (/^data:image\/(png|jpeg|gif|webp|bmp);base64,/.test(url)) return el("img", { src: url, alt: L("image"), class: "shot" });
  return el("span", { class: "muted" }, "[" + L("image") + "] " + url.slice(0, 200));
}

function actions(entry) {
  if (!entry.checkpoint) return "";
  return el("span", { class: "row" },
    el("button", { type: "button", class: "link", onclick: () => fork(entry.checkpoint) }, L("fork_here")),
    el("button", { type: "button", class: "link", onclick: () => replay(entry.checkpoint) }, L("replay_here")));
}

function entryNode(entry) {
  const m = entry.message.data;
  const when = el("span", { class: "muted" }, fmtIso(entry.at));
  if (entry.kind === "compaction") {
    return el("div", { class: "card compaction" }, el("strong", {}, L("compacted", { n: entry.summarized })), " ", when,
      el("pre", {}, entry.summary));
  }
  const type = entry.message.type;
  const [text, images] = textOf(m.content);
  const who = type === "human" ? ((m.response_metadata || {}).sender || L("user"))
    : type === "ai" ? L("assistant") : type === "tool" ? L("tool") + " " + (m.name || "") : type;
  const node = el("div", { class: "card msg msg-" + type },
    el("div", { class: "row" }, el("strong", {}, who), when, actions(entry)));
  if (type === "tool") {
    const status = (m.response_metadata || {}).ania_status || m.status || "";
    node.append(el("span", { class: "badge" }, status));
  }
  if (text) node.append(el("pre", {}, text));
  for (const url of images) node.append(imageNode(url));
  for (const call of m.tool_calls || []) {
    node.append(el("div", { class: "mono" }, "→ " + L("calls") + " " + call.name + " " + JSON.stringify(call.args)));
  }
  return node;
}

async function loadTranscript(page) {
  let data;
  try {
    data = await panelJSON("/api/sessions/" + encodeURIComponent(KEY).replace(/%2F/g, "/") + "?page=" + (page || 1));
  } catch (e) {
    document.getElementById("transcript").replaceChildren(el("p", { class: "error" }, e.message));
    return;
  }
  document.getElementById("summary").textContent = L("whole", { n: data.compactions });
  const box = document.getElementById("transcript");
  box.replaceChildren(...data.items.map(entryNode));
  pagerInto(document.getElementById("pager"), data, loadTranscript);
  pagerInto(document.getElementById("pager-top"), data, loadTranscript);
}

async function fork(at) {
  try {
    const r = await panelJSON("/api/sessions/fork", { method: "POST", json: { key: KEY, at: at } });
    flash(L("forked", { to: r.to }));
  } catch (e) {
    flash(L("common.failed", { error: e.message }), true);
  }
}

async function replay(at) {
  const box = document.getElementById("replay");
  box.hidden = false;
  box.replaceChildren(el("p", { class: "muted" }, L("replaying")));
  box.scrollIntoView({ behavior: "smooth" });
  try {
    const r = await panelJSON("/api/sessions/replay", { method: "POST", json: { key: KEY, at: at } });
    box.replaceChildren(el("h2", {}, L("replay_result", { scratch: r.scratch, status: r.status })),
      el("pre", {}, r.log));
  } catch (e) {
    box.replaceChildren(el("p", { class: "error" }, L("common.failed", { error: e.message })));
  }
}

document.addEventListener("DOMContentLoaded", () => loadTranscript(1));
