// Approvals: answer a waiting question; the list follows /api/approvals (a new question shows up on its own).
"use strict";
(function () {
  const labels = JSON.parse(document.getElementById("approvals-labels").textContent);
  document.getElementById("approvals").addEventListener("click", async (event) => {
    const button = event.target.closest(".ap-answer");
    if (!button) return;
    const card = button.closest("[data-id]");
    const id = card.getAttribute("data-id");
    for (const b of card.querySelectorAll("button")) b.disabled = true;
    try {
      const data = await panelJSON("/api/approvals/" + encodeURIComponent(id),
        { method: "POST", json: { decision: button.getAttribute("data-decision") } });
      flash(labels.answered.replace("{id}", data.id).replace("{decision}", data.decision));
      card.remove();
    } catch (e) {
      flash(e.message, true);
      for (const b of card.querySelectorAll("button")) b.disabled = false;
    }
  });
  let known = Array.from(document.querySelectorAll("[data-id]")).map((n) => n.getAttribute("data-id")).sort().join(",");
  poll(async () => {
    const data = await panelJSON("/api/approvals");
    const now = data.items.map((a) => a.id).sort().join(",");
    if (now !== known && !document.querySelector(".ap-answer:disabled")) {
      known = now;
      window.location.reload();
    }
  }, 4000);
})();
