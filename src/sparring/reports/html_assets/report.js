"use strict";
// The HTML report's behaviour: filters, verdict evidence marking, expand/collapse, local
// times. Vanilla JS, no network; the page reads the same without it.
(function () {
  function all(selector, root) {
    return Array.prototype.slice.call((root || document).querySelectorAll(selector));
  }
  function byId(id) {
    return document.getElementById(id);
  }

  var scenarios = all(".scenario");
  var status = byId("f-status"), tag = byId("f-tag"), category = byId("f-category");
  var search = byId("f-text");

  function value(control) {
    return control ? control.value : "";
  }

  var texts = new WeakMap(); // each scenario's text, lower case, read once

  function matches(el, text) {
    if (value(status) && el.dataset.status !== value(status)) return false;
    if (value(tag) && JSON.parse(el.dataset.tags).indexOf(value(tag)) < 0) return false;
    if (value(category) && el.dataset.category !== value(category)) return false;
    if (!text) return true;
    if (!texts.has(el)) texts.set(el, el.textContent.toLowerCase());
    return texts.get(el).indexOf(text) >= 0;
  }

  function applyFilters() {
    var text = value(search).trim().toLowerCase();
    var shown = 0;
    scenarios.forEach(function (el) {
      var ok = matches(el, text);
      el.hidden = !ok;
      if (ok) shown += 1;
    });
    byId("f-shown").textContent = shown + " of " + scenarios.length + " scenarios";
    byId("no-match").hidden = shown > 0;
  }

  [status, tag, category, search].forEach(function (control) {
    if (control) {
      control.addEventListener("input", applyFilters);
      control.addEventListener("change", applyFilters);
    }
  });

  function clear(root) {
    all("mark.hl", root).forEach(function (el) { el.classList.remove("hl"); });
    all(".turn.cited", root).forEach(function (el) { el.classList.remove("cited"); });
    all(".verdict.active", root).forEach(function (el) { el.classList.remove("active"); });
  }

  // Clicking a verdict marks its quoted evidence and the turns it cites; again, unmarks.
  function activate(card) {
    var trial = card.closest(".trial") || document;
    var conversation = card.closest(".conversation") || trial;
    var key = card.dataset.verdict;
    var wasActive = card.classList.contains("active");
    clear(trial);
    if (wasActive) return;
    all(".verdict[data-verdict='" + key + "']", trial).forEach(function (el) {
      el.classList.add("active");
    });
    var marks = all("mark.ev", conversation).filter(function (el) {
      return el.dataset.v.split(" ").indexOf(key) >= 0;
    });
    marks.forEach(function (el) { el.classList.add("hl"); });
    var cited = card.dataset.turns ? card.dataset.turns.split(" ") : [];
    var turns = all(".turn", conversation).filter(function (el) {
      return cited.indexOf(el.dataset.turn) >= 0;
    });
    turns.forEach(function (el) { el.classList.add("cited"); });
    var first = marks[0] || turns[0];
    if (first) first.scrollIntoView({ block: "center" });
  }

  document.addEventListener("click", function (event) {
    var card = event.target.closest && event.target.closest(".verdict");
    if (card) activate(card);
  });
  document.addEventListener("keydown", function (event) {
    var el = event.target;
    if ((event.key === "Enter" || event.key === " ") && el.classList && el.classList.contains("verdict")) {
      event.preventDefault();
      activate(el);
    }
  });

  function setOpen(open) {
    all(".scenario:not([hidden]), .scenario:not([hidden]) .trial").forEach(function (el) {
      el.open = open;
    });
  }
  byId("expand-all").addEventListener("click", function () { setOpen(true); });
  byId("collapse-all").addEventListener("click", function () { setOpen(false); });

  all("time[datetime]").forEach(function (el) {
    var when = new Date(el.getAttribute("datetime"));
    if (!isNaN(when.getTime())) el.textContent = when.toLocaleString();
  });
})();
