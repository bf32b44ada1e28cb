// The panel's shared script (no build step, no library). Page scripts (static/<page>.js) use:
//   panelFetch(url, options)  fetch with the session's CSRF token (X-CSRF-Token from <meta name="csrf-token">);
//                             a JSON body given as options.json is sent as application/json.
//   panelJSON(url, options)   the same, then the parsed JSON, or throws Error(the answer's "error" text).
//   flash(text, bad)          a message at the top of the page.
//   el(tag, attrs, ...kids)   a DOM element (text is always set as text, never as HTML).
//   poll(fn, ms)              call fn now and every ms while the page is visible.
"use strict";

function csrfToken() {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? meta.getAttribute("content") : "";
}

function panelFetch(url, options) {
  const opts = Object.assign({ credentials: "same-origin" }, options || {});
  const headers = new Headers(opts.headers || {});
  headers.set("X-CSRF-Token", csrfToken());
  if (opts.json !== undefined) {
    headers.set("Content-Type", "application/json");
    opts.body = JSON.stringify(opts.json);
    delete opts.json;
  }
  opts.headers = headers;
  return fetch(url, opts);
}

async function panelJSON(url, options) {
  const response = await panelFetch(url, options);
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    const message = data && data.error ? data.error : response.status + " " + response.statusText;
    throw new Error(message);
  }
  return data;
}

function flash(text, bad) {
  const box = document.getElementById("flash");
  if (!box) return;
  box.textContent = text;
  box.className = bad ? "flash bad" : "flash";
  box.hidden = false;
}

function el(tag, attrs, ...kids) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of kids) {
    if (kid === null || kid === undefined) continue;
    node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return node;
}

function poll(fn, ms) {
  let timer = null;
  const tick = async () => {
    if (!document.hidden) {
      try { await fn(); } catch (e) { /* the next tick tries again */ }
    }
    timer = setTimeout(tick, ms);
  };
  tick();
  return () => clearTimeout(timer);
}

function fmtTime(ts) {
  if (!ts) return "";
  const d = new Date(ts * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
    pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
}

function fmtNumber(n) {
  return (n === null || n === undefined) ? "" : Number(n).toLocaleString();
}

// Elements with data-ts="<unix seconds>" show the browser's local time.
document.addEventListener("DOMContentLoaded", () => {
  for (const node of document.querySelectorAll("[data-ts]")) {
    node.textContent = fmtTime(Number(node.getAttribute("data-ts")));
  }
});
