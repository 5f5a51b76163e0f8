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
    src.addEventListener("open", function () { status("Live: states update as they change."); live.setAttribute("data-state", "open"); });
    var fallback = live.innerHTML;
    src.onerror = function () {
      if (src.readyState === EventSource.CLOSED) {
        live.innerHTML = fallback; // refused (say 429): the page's own Refresh link again
        live.setAttribute("data-state", "closed");
      } else {
        status("Live updates paused; reconnecting…");
      }
    };
    // update shows a task's state: a new row for a task not listed.
    var update = function (t) {
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
        var created = cell(t.createdAt);
        created.className = "opt";
        row.appendChild(created);
        var action = cell("");
        var tpl = document.getElementById("cancel-template");
        if (tpl && (t.status === "pending" || t.status === "running")) {
          var form = tpl.content.firstElementChild.cloneNode(true);
          form.querySelector('input[name="bark"]').value = t.id;
          action.appendChild(form);
        }
        row.appendChild(action);
        table.tBodies[0].insertBefore(row, table.tBodies[0].firstChild);
      }
      row.querySelector(".status").textContent = t.status;
      if (t.status !== "pending" && t.status !== "running") {
        var f = row.querySelector("form.cancel");
        if (f) { f.remove(); }
      }
    };
    types.forEach(function (type) {
      src.addEventListener(type, function (e) {
        try { update(JSON.parse(e.data).data); } catch (err) { /* not an event */ }
      });
    });
    // A stream starts with the next event: what changed between the
    // page's answer and the stream's start is read once it is open.
    var list = live.getAttribute("data-tasks");
    src.addEventListener("open", function () {
      fetch(list, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : { items: [] }; })
        .then(function (p) { (p.items || []).forEach(update); })
        .catch(function () { /* the stream still updates */ });
    });
  }
  // The types of the API's events (docs/events.md, "Types"): an
  // EventSource hears an event with a type only through its listener.
  var eventTypes = ["bark.created", "bark.running", "bark.succeeded", "bark.failed", "bark.canceled",
    "dog.created", "dog.updated", "dog.deleted", "order.created", "order.updated",
    "car.created", "car.updated", "car.deleted", "car.imported",
    "garage.created", "garage.updated", "garage.deleted", "webhook.disabled"];
  // liveEvents appends the person's new events to #events, from where the
  // page ends (the stream's after=, then its own Last-Event-ID when it
  // reconnects).
  function liveEvents() {
    var state = document.getElementById("tail-state");
    var table = document.getElementById("events");
    if (!state || !table || !window.EventSource) { return; }
    var src = new EventSource(state.getAttribute("data-stream"));
    src.addEventListener("open", function () {
      state.textContent = "Live: new events appear below as they happen.";
      state.setAttribute("data-state", "open");
    });
    var fallback = state.innerHTML;
    src.onerror = function () {
      if (src.readyState === EventSource.CLOSED) {
        state.innerHTML = fallback;
        state.setAttribute("data-state", "closed");
      } else {
        state.textContent = "Live updates paused; reconnecting…";
      }
    };
    eventTypes.forEach(function (type) {
      src.addEventListener(type, function (e) {
        var ev;
        try { ev = JSON.parse(e.data); } catch (err) { return; }
        if (table.querySelector('tr[data-id="' + CSS.escape(ev.id) + '"]')) { return; }
        var row = document.createElement("tr");
        row.setAttribute("data-id", ev.id);
        row.appendChild(cell(ev.type));
        var subject = cell("");
        subject.className = "wrap";
        var code = document.createElement("code");
        code.textContent = ev.subject;
        subject.appendChild(code);
        row.appendChild(subject);
        var time = cell(ev.time);
        time.className = "opt";
        row.appendChild(time);
        table.tBodies[0].appendChild(row);
        var none = document.getElementById("noevents");
        if (none) { none.remove(); }
      });
    });
  }
  document.addEventListener("DOMContentLoaded", function () { copyButtons(); liveTasks(); liveEvents(); });
})();
