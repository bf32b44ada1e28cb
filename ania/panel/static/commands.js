/* The commands-and-persona page: commands.json and prompt.json from /api/commands and /api/prompt, saved
   whole with PUT (the server validates each with the code that reads it, and keeps the old file if not). */
"use strict";
(function () {
  var L = labels("commands-labels");
  var EMPTY = {commands: "{\n  \"commands\": {}\n}\n", prompt: "{\n  \"persona\": \"\",\n  \"system_prompt\": []\n}\n"};

  function loadCommands() {
    return api("GET", "/api/commands").then(function (data) {
      document.getElementById("commands-text").value = data.content || EMPTY.commands;
      var list = document.getElementById("command-list");
      list.replaceChildren();
      (data.commands.length ? data.commands : [L.none]).forEach(function (c) { list.appendChild(el("li", {text: c})); });
      if (data.problem) { list.appendChild(el("li", {class: "error", text: L.problem + ": " + data.problem})); }
    }).catch(failed);
  }

  function loadPrompt() {
    return api("GET", "/api/prompt").then(function (data) {
      document.getElementById("prompt-text").value = data.content || EMPTY.prompt;
      document.getElementById("prompt-source").textContent =
        L.running + ": " + data.running_source + (data.problem ? " (" + L.problem + ": " + data.problem + ")" : "");
    }).catch(failed);
  }

  function saver(textId, url, after) {
    return function () {
      api("PUT", url, {content: document.getElementById(textId).value}).then(function (data) {
        say(data.message);
        return after();
      }).catch(failed);
    };
  }

  document.getElementById("commands-save").addEventListener("click", saver("commands-text", "/api/commands", loadCommands));
  document.getElementById("prompt-save").addEventListener("click", saver("prompt-text", "/api/prompt", loadPrompt));
  loadCommands();
  loadPrompt();
}());
