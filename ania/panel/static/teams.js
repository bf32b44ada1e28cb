/* The teams page: every saved team from /api/teams; create (POST), edit (PUT), delete (DELETE). */
"use strict";
(function () {
  var L = labels("teams-labels");
  var form = document.getElementById("team-form");
  var editing = null;  // {name, scope} of the team being edited, or null for a new one

  let page = 1;

  function load() {
    return api("GET", "/api/teams?size=50&page=" + page).then(function (data) {
      fillTable("team-rows", data.items, row, L.none, 5);
      pager("teams-pager", data, (n) => { page = n; load(); });
    }).catch(failed);
  }

  function row(team) {
    var q = "?scope=" + encodeURIComponent(team.scope);
    return el("tr", {"data-team": team.name},
      el("td", {text: team.name}), el("td", {text: team.scope}), el("td", {text: team.purpose}),
      el("td", {text: team.members.map(function (m) { return m.name; }).join(", ")}),
      el("td", {class: "actions"},
        button(L.edit, function () { edit(team); }, {"data-action": "edit"}),
        button(L["delete"], function () {
          if (!window.confirm(L.confirm_delete)) { return; }
          api("DELETE", "/api/teams/" + encodeURIComponent(team.name) + q).then(function () {
            say(L.deleted);
            return load();
          }).catch(failed);
        }, {"data-action": "delete", class: "danger"})));
  }

  function edit(team) {
    var v = form.elements;
    editing = {name: team.name, scope: team.scope};
    v.name.value = team.name;
    v.name.readOnly = true;
    v.scope.value = team.scope;
    v.scope.readOnly = true;
    v.purpose.value = team.purpose;
    v.members.value = team.members.map(function (m) { return m.name + ": " + m.role; }).join("\n");
    v.timeout_sec.value = team.timeout_sec || "";
    v.max_rounds.value = team.max_rounds || "";
    document.getElementById("team-form-title").textContent = L.editing + " " + team.name;
    document.getElementById("team-cancel").hidden = false;
  }

  function reset() {
    editing = null;
    form.reset();
    form.elements.name.readOnly = false;
    form.elements.scope.readOnly = false;
    document.getElementById("team-form-title").textContent = L["new"];
    document.getElementById("team-cancel").hidden = true;
  }

  document.getElementById("team-cancel").addEventListener("click", reset);
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = form.elements;
    var body = {purpose: v.purpose.value, scope: v.scope.value.trim(),
                members: parseLines(v.members.value, ":").map(function (p) { return {name: p[0], role: p[1]}; })};
    if (v.timeout_sec.value) { body.timeout_sec = parseInt(v.timeout_sec.value, 10); }
    if (v.max_rounds.value) { body.max_rounds = parseInt(v.max_rounds.value, 10); }
    var call;
    if (editing) {
      call = api("PUT", "/api/teams/" + encodeURIComponent(editing.name), body);
    } else {
      body.name = v.name.value.trim();
      call = api("POST", "/api/teams", body);
    }
    call.then(function (team) { say(L.saved + " " + team.name); reset(); return load(); }).catch(failed);
  });

  load();
}());
