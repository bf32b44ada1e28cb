/* The skills page: /api/skills lists them; an upload or a source installs (multipart POST), remove
   deletes an installed one, reload re-reads the folders. The server's install checks decide. */
"use strict";
(function () {
  var L = labels("skills-labels");

  let page = 1;

  function load() {
    return api("GET", "/api/skills?size=50&page=" + page).then(function (data) {
      fillTable("skill-rows", data.items, row, L.none, 5);
      pager("skills-pager", data, (n) => { page = n; load(); });
      var list = document.getElementById("skill-problems");
      list.replaceChildren();
      (data.problems.length ? data.problems : [L.no_problems]).forEach(function (p) {
        list.appendChild(el("li", {text: p}));
      });
    }).catch(failed);
  }

  function row(skill) {
    var actions = el("td", {class: "actions"});
    if (skill.origin === "installed") {
      actions.appendChild(button(L.remove, function () {
        if (!window.confirm(L.confirm_remove)) { return; }
        api("DELETE", "/api/skills/" + encodeURIComponent(skill.name)).then(function (data) {
          say(data.message);
          return load();
        }).catch(failed);
      }, {"data-action": "remove", class: "danger"}));
    }
    return el("tr", {"data-skill": skill.name},
      el("td", {text: skill.name}), el("td", {text: L[skill.origin] || skill.origin}),
      el("td", {class: "clip", text: skill.description}), el("td", {text: String(skill.files.length)}), actions);
  }

  function install(form) {
    api("POST", "/api/skills", new FormData(form)).then(function (data) {
      say(data.message);
      form.reset();
      return load();
    }).catch(failed);
  }

  ["skill-upload", "skill-source"].forEach(function (id) {
    document.getElementById(id).addEventListener("submit", function (ev) { ev.preventDefault(); install(ev.target); });
  });
  document.getElementById("skill-reload").addEventListener("click", function () {
    api("POST", "/api/skills/reload").then(function () { say(L.reloaded); return load(); }).catch(failed);
  });

  load();
}());
