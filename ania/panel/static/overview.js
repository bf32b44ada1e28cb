// Overview: the counters follow /api/overview every 5 s without a reload.
"use strict";
(function () {
  const bar = document.getElementById("ov-bar");
  const setBar = (pct) => { if (bar) { bar.style.width = Math.min(100, pct) + "%"; bar.className = pct >= 100 ? "over" : ""; } };
  if (bar) setBar(Number(bar.getAttribute("data-pct")));
  poll(async () => {
    const data = await panelJSON("/api/overview");
    document.getElementById("ov-tokens").textContent = fmtNumber(data.tokens.total);
    document.getElementById("ov-running").textContent = String(data.running_turns);
    document.getElementById("ov-mcp").textContent = data.mcp.up + " / " + data.mcp.total;
    if (data.tokens.global_quota) setBar(Math.floor(100 * data.tokens.total / data.tokens.global_quota));
  }, 5000);
})();
