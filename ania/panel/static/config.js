// Configuration: save one key (PUT /api/config/{key}); the row then says it takes effect after a reboot.
"use strict";
(function () {
  const labels = JSON.parse(document.getElementById("config-labels").textContent);
  const bar = document.getElementById("reboot-bar");

  function valueOf(row) {
    const input = row.querySelector(".cfg-input");
    const kind = row.getAttribute("data-kind");
    const raw = input.value;
    if (kind === "bool") return raw === "true";
    if (kind === "number") return raw === "" ? null : Number(raw);
    if (kind === "json") return JSON.parse(raw);
    return raw;
  }

  for (const button of document.querySelectorAll(".cfg-save")) {
    button.addEventListener("click", async () => {
      const row = button.closest("tr");
      const key = row.getAttribute("data-key");
      let value;
      try { value = valueOf(row); } catch (e) { flash(labels.bad_json + " " + e.message, true); return; }
      if (row.getAttribute("data-kind") === "secret" && value === "") { flash(labels.empty_secret, true); return; }
      button.disabled = true;
      try {
        const data = await panelJSON("/api/config/" + encodeURIComponent(key), { method: "PUT", json: { value: value } });
        flash(data.message);
        const pending = row.querySelector(".cfg-pending");
        if (data.item.needs_reboot) {
          const shown = data.item.sensitive ? "****" : JSON.stringify(data.item.pending);
          pending.textContent = labels.pending.replace("{value}", shown);
          pending.hidden = false;
          bar.hidden = false;
        } else {
          pending.hidden = true;
        }
        if (data.item.sensitive) row.querySelector(".cfg-input").value = "";
      } catch (e) {
        flash(e.message, true);
      } finally {
        button.disabled = false;
      }
    });
  }

  const reboot = document.getElementById("reboot");
  if (reboot) {
    reboot.addEventListener("click", async () => {
      reboot.disabled = true;
      flash(labels.rebooting);
      try {
        const data = await panelJSON("/api/reboot", { method: "POST" });
        flash(data.message);
        setTimeout(() => window.location.reload(), 1200);
      } catch (e) {
        flash(e.message, true);
        reboot.disabled = false;
      }
    });
  }

  const search = document.getElementById("config-search");
  search.addEventListener("input", () => {
    const q = search.value.trim().toLowerCase();
    for (const row of document.querySelectorAll("tr[data-key]")) {
      row.hidden = q !== "" && !row.textContent.toLowerCase().includes(q);
    }
  });
})();
