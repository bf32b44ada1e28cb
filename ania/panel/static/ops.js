// Operation log: on the first page, new rows appear without a reload (polls /api/ops with the same filters).
"use strict";
(function () {
  const table = document.getElementById("ops-table");
  if (table.getAttribute("data-live") !== "true") return;
  const tbody = table.querySelector("tbody");
  const query = new URLSearchParams(window.location.search);
  query.set("page", "1");
  poll(async () => {
    const data = await panelJSON("/api/ops?" + query.toString());
    if (!data.items.length) return;
    const first = tbody.querySelector("tr[data-id]");
    const newest = first ? Number(first.getAttribute("data-id")) : 0;
    const fresh = data.items.filter((r) => r.id > newest);
    if (!fresh.length) return;
    if (!first) tbody.textContent = "";
    for (const r of fresh.reverse()) {
      const row = el("tr", { "data-id": r.id },
        el("td", { text: fmtTime(r.ts) }), el("td", {}, el("span", { class: "badge", text: r.kind })),
        el("td", { class: "mono", text: r.actor || "—" }), el("td", { class: "mono", text: r.session || "—" }),
        el("td", {}, el("code", { text: JSON.stringify(r.detail) })));
      tbody.prepend(row);
    }
  }, 5000);
})();
