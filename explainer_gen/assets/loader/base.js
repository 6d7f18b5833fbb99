/* explainer-gen's loader, its base: what every other part shares (the names from FACTS, the page
 * and the reader's state, fetching, waiting for a pause, reporting).
 *
 * The loader brings precomputed figures to life and keeps the page's numbers in step. Everything
 * the page shows was computed at build time; the loader only picks rows. The page works before
 * it runs: each figure is a static SVG coloured by the page's CSS variables, with its controls in
 * the HTML (and the page root holds the controls of sliders that only the prose uses). It wires
 * the controls to the prose numbers and the URL, and swaps a figure for a live Vega view only
 * when a reader reaches for it (pointer, focus, touch, a control, a scenario change, or a shared
 * link's state), one figure per task, so a reader who only reads never pays for Vega. It runs
 * once per tab, then on every page that Material's instant navigation shows.
 *
 * The build joins the parts, in the order and with the jobs explainer_gen/client/loader.py lists,
 * into one function that runs once per tab, with the contract's facts (`FACTS`) at its head: the
 * contract version, the class and attribute names the page's HTML uses, the name that stands for
 * the switch in a number's dependencies and the chart font (explainer_gen/client/contract.py,
 * facts). Every part reads those from FACTS and spells none out. The parts share one scope: a
 * name declared at the top of one is seen by all, and no two declare the same name. */

var CLS = FACTS.classes, ATTR = FACTS.attributes;
function dot(name) { return "." + name; } // a class as a selector
function having(attr, value) { return "[" + attr + (value === undefined ? "" : '="' + value + '"') + "]"; }

var generation = 0; // bumps on every page change; stale async work checks it and stops
var figures = []; // {el, view, url, payload, result, params: [names]}
var page = null; // this page's JSON: switch, scenarios, sliders, numbers
var state = null; // {scenario: key, sliders: {name: value}}

var jsonCache = new Map();

function checked(what, json) {
  if (!json || json.version !== FACTS.version) {
    throw new Error(what + " has contract version " + (json && json.version) + ", this loader reads " + FACTS.version);
  }
  return json;
}

function fetchJSON(url) {
  if (!jsonCache.has(url)) {
    jsonCache.set(url, fetch(url).then(function (r) {
      if (!r.ok) throw new Error(url + " answered " + r.status);
      return r.json();
    }).catch(function (err) { jsonCache.delete(url); throw err; }));
  }
  return jsonCache.get(url);
}

// A figure is drawn in one of two layouts (explainer_gen/compute/layout.py). The page's CSS decides
// which, by the figure's width: it shows the static picture of that layout and marks the view
// "narrow" in a custom property, read here, so the live view always matches the picture (a
// browser without container queries gets the wide layout in both).
function layoutFor(fig) {
  return getComputedStyle(fig.view).getPropertyValue(FACTS.layout.property).trim() === "narrow" ? "narrow" : "wide";
}

// The static picture the page displays for the figure's layout (the first, if none is displayed).
function shownStill(fig) {
  var all = fig.el.querySelectorAll(dot(CLS.static));
  for (var i = 0; i < all.length; i++) if (all[i].getClientRects().length) return all[i];
  return all[0] || null;
}

function resolve(el, attr) { return new URL(el.getAttribute(attr), document.baseURI).href; }

function nextTask() { return new Promise(function (ok) { setTimeout(ok, 0); }); }

// Text that changes as a slider moves (a number in the prose, a slider's shown value): its one text
// node changes in place. Setting textContent replaces the node, and the browser then restyles and
// lays out a new one: at 4x CPU on the speculative decoding page, style fell from 4.2 to 0.3 ms a
// move and layout from 10 to 6-8 (make bench times the sliders).
function setText(el, text) {
  var node = el.firstChild;
  if (node && node.nodeType === 3 && !node.nextSibling) node.data = text;
  else el.textContent = text;
}

// What waits for the reader to pause, by name: each call pushes its own wait back. A page
// change drops them all (teardown); `generation` guards a callback already queued.
var PAUSE_MS = 150;
var timers = {};
function afterPause(what, ms, fn) {
  var gen = generation;
  clearTimeout(timers[what]);
  timers[what] = setTimeout(function () { delete timers[what]; if (gen === generation) fn(); }, ms);
}
function cancel(what) { clearTimeout(timers[what]); delete timers[what]; }

function report(err) { console.error("explainer-gen:", err); }

// What is on the screen or within `margin` of it (a CSS margin: "50% 0px" is half a screen above
// and below), for the work that only what a reader can see needs while they move a slider: the
// numbers (numbers.js) and the figures' views (figures.js). `onNear(el)` runs as a watched element
// comes near. Until the browser first reports, and where it has no IntersectionObserver,
// everything counts as near.
function nearWatcher(margin, onNear) {
  var near = new Set(), reported = new Set();
  var observer = window.IntersectionObserver ? new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      reported.add(e.target);
      if (!e.isIntersecting) { near.delete(e.target); return; }
      near.add(e.target);
      onNear(e.target);
    });
  }, { rootMargin: margin }) : null;
  return {
    observe: function (el) { if (observer) observer.observe(el); },
    isNear: function (el) { return !observer || !reported.has(el) || near.has(el); },
    disconnect: function () { if (observer) observer.disconnect(); near.clear(); reported.clear(); }
  };
}
