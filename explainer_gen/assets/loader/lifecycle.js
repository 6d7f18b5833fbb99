/* explainer-gen's loader: the page's lifecycle. Each page that Material (or Zensical) shows is
 * set up here, its state read once a reader acts, and a reader's moves handed to the other parts;
 * the previous page's work is dropped first. */

var INTENT = ["pointerenter", "focusin", "touchstart"]; // a reader reaching for a figure
// The first signs of a reader acting on the page, anywhere in it (see init).
var WAKE = ["pointerover", "pointerdown", "touchstart", "keydown", "focusin", "input", "change"];
var wake = function () {}; // reads the page's state, once per page; set by init
var pageUrl = null; // the page state's address, which the files it names are found from
var stateArrived = Promise.resolve(); // settles once the page's state is known (or at once: none)
var stateArrives = function () {};

// Listen for the reader's first acts anywhere on the page (WAKE) with `fn`, or stop.
function listenForActs(fn, on) {
  WAKE.forEach(function (type) {
    if (on) window.addEventListener(type, fn, { capture: true, passive: true });
    else window.removeEventListener(type, fn, true);
  });
}

// A reader may act before the first init: it runs when the theme's document$ first emits, once
// the theme's bundle has arrived and run and, in Chromium, in a task after DOMContentLoaded
// (start.js). Acts from the moment this script runs are noted, and the first init answers them
// at once (a figure the reader touched or points at is under the pointer then: see start). Asked
// once, by the first init, this stops listening: each later page's init listens from its start.
var actedBeforeInit = false;
function earlyAct() { actedBeforeInit = true; }
listenForActs(earlyAct, true);
function actedEarly() {
  listenForActs(earlyAct, false);
  var acted = actedBeforeInit;
  actedBeforeInit = false;
  return acted;
}

// The page's state, read if it is not yet (how.js: a number's card needs it to find its file).
function withState() { wake(); return stateArrived; }

function onInput(event) {
  var input = event.target, name = input.getAttribute(ATTR.param);
  if (!name) return;
  var value = +input.value;
  if (state.sliders[name] === value) return;
  state.sliders[name] = value;
  inputs(name).forEach(function (other) {
    if (other !== input) other.value = value;
    var out = other.parentNode.querySelector("output");
    if (out) setText(out, shownValue(name, other.value));
  });
  var own = input.closest(dot(CLS.figure));
  figures.forEach(function (fig) {
    if (fig.params.indexOf(name) < 0) return;
    if (own === fig.el) moved = fig;
    describeSoon(fig);
  });
  followSliders(name, own); // figures.js: those near the screen now, the others later
  renderNumbersSoon();
  writeURLSoon();
  announceSoon();
}

function onScenario() {
  var gen = generation;
  state.scenario = scenarioFromSelects();
  showScenario(state.scenario);
  renderNumbers();
  writeURLSoon();
  announceSoon();
  figures.forEach(function (fig) {
    describeFigure(fig);
    if (!fig.result) { schedule(fig); return; }
    dataFor(fig).then(function (cols) {
      if (gen !== generation || !fig.result) return;
      fig.result.view.data("table", rows(cols)).runAsync();
    }).catch(report);
  });
}

function teardown() {
  generation++;
  Object.keys(timers).forEach(cancel);
  resetDescriptions();
  resetNumbers();
  resetControls();
  listenForActs(wake, false);
  wake = function () {};
  resetFigures();
  resetExports();
  page = null;
  state = null;
  pageUrl = null;
  stateArrived = Promise.resolve();
  stateArrives = function () {};
}

function init() {
  teardown();
  resetHowCard(); // how.js: the numbers' card, on any page with computed numbers
  var gen = generation;
  var acted = actedEarly();
  var root = document.querySelector(dot(CLS.page) + having(ATTR.page));
  if (!root) return;
  pageUrl = resolve(root, ATTR.page);
  stateArrived = new Promise(function (ok) { stateArrives = ok; });
  // The page's <noscript> hides the controls from readers without JavaScript. Zensical's
  // instant navigation parses the new page with scripting off, so the style inside comes
  // alive there and would hide them from everyone: with the script running, it goes.
  Array.prototype.forEach.call(root.querySelectorAll("noscript"), function (n) { n.remove(); });
  bundleUrl = resolve(root, ATTR.bundle);
  figures = Array.prototype.slice.call(document.querySelectorAll(dot(CLS.figure) + having(ATTR.figure))).map(function (el) {
    var params = Array.prototype.map.call(el.querySelectorAll(dot(CLS.controls) + " input" + having(ATTR.param)),
      function (input) { return input.getAttribute(ATTR.param); });
    var view = el.querySelector(dot(CLS.view));
    return { el: el, view: view, url: resolve(el, ATTR.figure), label: view.getAttribute("aria-label"),
             payload: null, result: null, params: params, wanted: false };
  });
  figures.forEach(addExports);
  figures.forEach(function (fig) { if (resized) resized.observe(fig.el); }); // their layout: figures.js, relayout
  watchFigures(); // which are near the screen: figures.js, followSliders
  // Listen for a reader reaching for a figure from the start; what arrives before the
  // page's state is known is remembered and acted on once it is.
  figures.forEach(function (fig) {
    function want() { fig.wanted = true; if (state) schedule(fig); else wake(); }
    INTENT.forEach(function (type) { fig.el.addEventListener(type, want, { once: true, passive: true }); });
  });
  // The page's state (every number's texts, the scenarios) is read only once it can matter:
  // at once for a shared link, whose numbers differ from the built page's, and otherwise at the
  // reader's first pointer, touch, key or control. A reader who only reads the page as built
  // never downloads or parses it, and the page's first seconds carry no work of ours.
  var started = false;
  wake = function () {
    if (started) return;
    started = true;
    listenForActs(wake, false);
    start(gen, root);
  };
  if (location.search || acted) wake();
  else listenForActs(wake, true);
}

function start(gen, root) {
  fetchJSON(pageUrl).then(function (info) {
    if (gen !== generation) return;
    page = checked("page state", info);
    // Controls the reader moved before the state arrived (or the browser restored on going
    // back) start from the page's own state and are then moved, as the reader moved them.
    var early = movedControls();
    state = initialState();
    showScenario(state.scenario);
    showControls();
    // The root holds the page's own sliders too: only a select of the switch changes the scenario.
    root.addEventListener("change", function (event) {
      if (event.target.hasAttribute && event.target.hasAttribute(ATTR.switch)) onScenario();
    });
    Array.prototype.forEach.call(document.querySelectorAll(dot(CLS.controls)), function (c) {
      c.addEventListener("input", onInput);
    });
    renderNumbers();
    watchNumbers();
    changed.clear(); // a shared link's numbers are what the page opens with, not news
    var shared = !isDefault(); // a shared link: its state differs from every static image
    figures.forEach(function (fig) {
      // Until a reader reaches for a figure, its static image is the chart: no Vega needed.
      if (shared || fig.wanted || fig.el.matches(":hover") || fig.el.contains(document.activeElement)) schedule(fig);
    });
    early.forEach(function (m) {
      m.control.value = m.value;
      if (m.control.tagName === "SELECT") onScenario(); else onInput({ target: m.control });
    });
    stateArrives();
  }).catch(report);
}

howListen();
new MutationObserver(retheme).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
window.explainerGen = {
  figures: function () { return figures.filter(function (f) { return f.result; }); },
  state: function () { return state; },
  facts: function () { return FACTS; }
};

// Each page Material (or Zensical) shows: its document$ emits for the first page and after every
// instant navigation. The theme's bundle is deferred (render/chrome.py), so it runs after this
// script, which is deferred too and comes earlier in the page; document$ is there by
// DOMContentLoaded, which fires once every deferred script has run. Without the theme, init runs
// once, then.
function begin() {
  if (window.document$ && typeof window.document$.subscribe === "function") window.document$.subscribe(init);
  else init();
}
if (window.document$ || document.readyState === "complete") begin();
else document.addEventListener("DOMContentLoaded", begin, { once: true });
