/* The hooks page: hooks.json from /api/hooks, saved with PUT (the server validates it first); a draft is
   tried against a sample event with POST /api/hooks/try, which runs it through the hook runner. */
"use strict";
(function () {
  var L = labels("hooks-labels");
  var text = document.getElementById("hooks-text");

  api("GET", "/api/hooks").then(function (data) {
    text.value = data.content || "{\n  \"hooks\": {}\n}\n";
  }).catch(failed);

  document.getElementById("hooks-save").addEventListener("click", function () {
    api("PUT", "/api/hooks", {content: text.value}).then(function (data) { say(data.message); }).catch(failed);
  });

  document.getElementById("hooks-trial").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = ev.target.elements;
    var body = {content: text.value, event: v.event.value};
    if (v.tool_name.value.trim()) { body.tool_name = v.tool_name.value.trim(); }
    if (v.prompt.value) { body.prompt = v.prompt.value; }
    if (v.tool_input.value.trim()) {
      try { body.tool_input = JSON.parse(v.tool_input.value); } catch (e) { flash(L.bad_input, true); return; }
    }
    var out = document.getElementById("hooks-result");
    api("POST", "/api/hooks/try", body).then(function (r) {
      var verdict = r.blocked ? L.blocked : (r.ask ? L.ask : L.passed);
      var lines = [L.matched + ": " + r.matched, verdict + (r.reason ? ": " + r.reason : "")];
      out.textContent = lines.concat(r.context).join("\n");
      say(verdict);
    }).catch(function (err) { out.textContent = ""; failed(err); });
  });
}());
