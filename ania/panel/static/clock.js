/* The scheduled-tasks page: lists every chat's tasks and the run log from /api/clock; create, pause,
   resume, run now and delete through the same API. */
"use strict";
(function () {
  var L = labels("clock-labels");

  let page = 1;
  let logOf = "";  // a task id: the run log shows that task's runs only

  function load() {
    const only = logOf ? "&task=" + logOf : "";
    return api("GET", "/api/clock?size=50&page=" + page + only).then(function (data) {
      fillTable("clock-tasks", data.items, taskRow, L.none, 7);
      pager("clock-pager", data, (n) => { page = n; load(); });
      fillTable("clock-runs", data.runs, runRow, L.no_runs, 6);
      document.getElementById("clock-log-of").textContent = logOf ? "#" + logOf : "";
      document.getElementById("clock-log-all").hidden = !logOf;
    }).catch(failed);
  }

  function act(id, action) {
    return api("POST", "/api/clock/" + id + "/" + action).then(function () {
      say(action === "run" ? L.started : L.done);
      return load();
    }).catch(failed);
  }

  function taskRow(task) {
    var actions = el("td", {class: "actions"});
    if (!task.broken) {
      actions.appendChild(task.enabled
        ? button(L.pause, function () { act(task.id, "pause"); }, {"data-action": "pause"})
        : button(L.resume, function () { act(task.id, "resume"); }, {"data-action": "resume"}));
      actions.appendChild(button(L.run_now, function () { act(task.id, "run"); }, {"data-action": "run"}));
    }
    actions.appendChild(button(L.log, function () { logOf = String(task.id); load(); }, {"data-action": "log"}));
    actions.appendChild(button(L["delete"], function () {
      if (!window.confirm(L.confirm_delete)) { return; }
      api("DELETE", "/api/clock/" + task.id).then(function () { say(L.deleted); return load(); }).catch(failed);
    }, {"data-action": "delete", class: "danger"}));
    var state = task.broken ? L.broken + ": " + task.broken : (task.enabled ? L.active : L.paused);
    return el("tr", {"data-task": String(task.id)},
      el("td", {text: String(task.id)}), el("td", {text: task.session}), el("td", {text: task.name || ""}),
      el("td", {text: task.schedule || ""}), el("td", {text: task.next_fire || ""}),
      el("td", {class: "state", text: state}), actions);
  }

  function runRow(run) {
    return el("tr", {},
      el("td", {text: run.id}), el("td", {text: String(run.task_id)}), el("td", {text: run.status}),
      el("td", {text: run.scheduled}), el("td", {text: String(run.tokens)}),
      el("td", {class: "clip", text: run.reply || run.detail}));
  }

  document.getElementById("clock-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var f = ev.target, v = f.elements;
    var body = {session: v.session.value.trim(), schedule: v.schedule.value, prompt: v.prompt.value,
                run_once: v.run_once.checked};
    if (v.name.value.trim()) { body.name = v.name.value.trim(); }
    if (v.timeout_sec.value) { body.timeout_sec = parseInt(v.timeout_sec.value, 10); }
    api("POST", "/api/clock", body).then(function (task) {
      say(L.created + " #" + task.id);
      f.reset();
      return load();
    }).catch(failed);
  });

  document.getElementById("clock-log-all").addEventListener("click", function () { logOf = ""; load(); });
  poll(load, 5000);  // runs start and end on their own: the tables follow without a reload
}());
