// yard console: copy buttons and the live task list. Everything works
// without this file; it only adds to the page.
"use strict";
(function () {
  function copyButtons() {
    document.querySelectorAll("button.copy[data-copy]").forEach(function (b) {
      b.hidden = false;
      b.addEventListener("click", function () {
        var el = document.getElementById(b.getAttribute("data-copy"));
        if (!el) { return; }
        var text = el.textContent;
        var done = function () { b.textContent = "Copied"; setTimeout(function () { b.textContent = "Copy"; }, 1500); };
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(text).then(done, function () { select(el); });
        } else {
          select(el);
        }
      });
    });
  }
  function select(el) {
    var range = document.createRange();
    range.selectNodeContents(el);
    var sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }
  function cell(text) {
    var td = document.createElement("td");
    td.textContent = text;
    return td;
  }
  // liveTasks follows the API's event stream (docs/events.md) and updates
  // the state of this dog's tasks in #tasks.
  function liveTasks() {
    var live = document.getElementById("live");
    var table = document.getElementById("tasks");
    if (!live || !table || !window.EventSource) { return; }
    var dog = live.getAttribute("data-dog");
    var src = new EventSource(live.getAttribute("data-events"));
    var types = ["bark.created", "bark.running", "bark.succeeded", "bark.failed", "bark.canceled"];
    var status = function (text) { live.textContent = text; };
    src.onopen = function () { status("Live: states update as they change."); live.setAttribute("data-state", "open"); };
    src.onerror = function () { status("Live updates paused; reconnecting…"); };
    types.forEach(function (type) {
      src.addEventListener(type, function (e) {
        var ev;
        try { ev = JSON.parse(e.data); } catch (err) { return; }
        var t = ev.data;
        if (!t || t.dog !== dog) { return; }
        var row = table.querySelector('tr[data-bark="' + CSS.escape(t.id) + '"]');
        if (!row) {
          row = document.createElement("tr");
          row.setAttribute("data-bark", t.id);
          var code = document.createElement("code");
          code.textContent = t.id.length > 12 ? "…" + t.id.slice(-12) : t.id;
          code.title = t.id;
          var first = document.createElement("td");
          first.appendChild(code);
          row.appendChild(first);
          row.appendChild(cell(t.effect));
          var st = cell(t.status);
          st.className = "status";
          row.appendChild(st);
          row.appendChild(cell(t.createdAt));
          row.appendChild(cell(""));
          table.tBodies[0].insertBefore(row, table.tBodies[0].firstChild);
        }
        row.querySelector(".status").textContent = t.status;
        if (t.status !== "pending" && t.status !== "running") {
          var f = row.querySelector("form.cancel");
          if (f) { f.remove(); }
        }
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () { copyButtons(); liveTasks(); });
})();
