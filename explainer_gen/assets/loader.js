/* explainer-gen: brings precomputed figures to life and keeps the page's numbers in step.
 * Everything the page shows was computed at build time; this file only picks rows.
 *
 * The page works before this runs: each figure is a static SVG coloured by the page's CSS
 * variables, with its controls in the HTML (and the page root holds the controls of sliders that
 * only the prose uses). This file wires the controls to the prose numbers and the
 * URL, and swaps a figure for a live Vega view only when a reader reaches for it (pointer,
 * focus, touch, a control, a scenario change, or a shared link's state), one figure per
 * task, so a reader who only reads never pays for Vega.
 * It runs once per tab, then on every page that Material's instant navigation shows.
 *
 * The build wraps this in a function that starts with `FACTS` (explainer_gen/client/loader.py):
 * the contract version, the class and attribute names the page's HTML uses, the name that stands
 * for the switch in a number's dependencies and the chart font (explainer_gen/client/contract.py,
 * facts). Those are read from FACTS, never spelled out here. */

var CLS = FACTS.classes, ATTR = FACTS.attributes;
function dot(name) { return "." + name; } // a class as a selector
function having(attr, value) { return "[" + attr + (value === undefined ? "" : '="' + value + '"') + "]"; }

var generation = 0; // bumps on every page change; stale async work checks it and stops
var figures = []; // {el, view, url, payload, result, params: [names]}
var page = null; // this page's JSON: switch, scenarios, sliders, numbers
var state = null; // {scenario: key, sliders: {name: value}}
var INTENT = ["pointerenter", "focusin", "touchstart"]; // a reader reaching for a figure
// The first signs of a reader acting on the page, anywhere in it (see init).
var WAKE = ["pointerover", "pointerdown", "touchstart", "keydown", "focusin", "input", "change"];
var wake = function () {}; // reads the page's state, once per page; set by init
var queue = [];
var draining = false;
var jsonCache = new Map();
var bundle = null;
var bundleUrl = null;

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

function resolve(el, attr) { return new URL(el.getAttribute(attr), document.baseURI).href; }

function loadBundle() {
  if (window.vegaEmbed) return Promise.resolve();
  if (!bundle) {
    bundle = new Promise(function (ok, fail) {
      var s = document.createElement("script");
      s.src = bundleUrl;
      s.onload = ok;
      s.onerror = function () { bundle = null; fail(new Error("could not load " + bundleUrl)); };
      document.head.appendChild(s);
    });
  }
  return bundle;
}

function nextTask() { return new Promise(function (ok) { setTimeout(ok, 0); }); }

function scheme() {
  return document.body.getAttribute("data-md-color-scheme") === "slate" ? "dark" : "light";
}

function rows(cols) {
  var names = Object.keys(cols), n = names.length ? cols[names[0]].length : 0, out = new Array(n);
  for (var i = 0; i < n; i++) {
    var r = {};
    for (var j = 0; j < names.length; j++) r[names[j]] = cols[names[j]][i];
    out[i] = r;
  }
  return out;
}

// -- state and the URL --------------------------------------------------------------
// A slider's place among its positions, and the position at a place: `s` is the page state's
// slider ({min, step, count, decimals}, computed by the build for every slider of the page).
function positionOf(s, value) {
  return Math.max(0, Math.min(s.count - 1, Math.round((value - s.min) / s.step)));
}

function snap(s, value) {
  return +(s.min + positionOf(s, value) * s.step).toFixed(s.decimals);
}

// The scenario whose switch choices match the selects, by key (Scenario.key in
// explainer_gen/sources/controls.py, which explainer_gen/client/contract.py writes).
function scenarioFromSelects() {
  var chosen = {};
  Object.keys(page.switch).forEach(function (name) {
    var sel = document.querySelector(having(ATTR.switch, name));
    if (sel) chosen[name] = sel.value;
  });
  for (var i = 0; i < page.scenarios.length; i++) {
    var c = page.scenarios[i].choices, names = Object.keys(c), match = true;
    for (var j = 0; j < names.length && match; j++) match = !(names[j] in chosen) || c[names[j]] === chosen[names[j]];
    if (match) return page.scenarios[i].key;
  }
  return page.default; // choices that cannot run (a URL may ask for them): start() shows the default's
}

// Put the selects on a scenario's choices, grey out those that would not run from it, and say why.
function showScenario(key) {
  var s = page.scenarios[scenarioIndex(key)];
  if (!s) return;
  Object.keys(page.switch).forEach(function (name) {
    var sel = document.querySelector(having(ATTR.switch, name));
    if (!sel) return;
    var blocked = s.blocked[name] || [];
    if (sel.value !== s.choices[name]) sel.value = s.choices[name];
    Array.prototype.forEach.call(sel.options, function (o) { o.disabled = blocked.indexOf(o.value) >= 0; });
  });
  var note = document.querySelector(dot(CLS.switch_note));
  if (note && note.textContent !== s.note) note.textContent = s.note;
}

function scenarioIndex(key) {
  for (var i = 0; i < page.scenarios.length; i++) if (page.scenarios[i].key === key) return i;
  return -1;
}

var inputCache = {}; // param -> its range inputs on this page
function inputs(name) {
  if (!inputCache[name]) {
    inputCache[name] = Array.prototype.slice.call(document.querySelectorAll(dot(CLS.controls) + " input" + having(ATTR.param, name)));
  }
  return inputCache[name];
}

function initialState() {
  var q = new URLSearchParams(location.search), sliders = {};
  Array.prototype.forEach.call(document.querySelectorAll(dot(CLS.controls) + " input" + having(ATTR.param)), function (input) {
    var name = input.getAttribute(ATTR.param);
    if (name in sliders) return;
    var v = parseFloat(q.get(name));
    sliders[name] = isFinite(v) ? snap(page.sliders[name], v) : +input.defaultValue;
  });
  Object.keys(page.sliders).forEach(function (name) {
    if (name in sliders) return;
    var s = page.sliders[name], v = parseFloat(q.get(name));
    sliders[name] = isFinite(v) ? snap(s, v) : s.default;
  });
  Object.keys(page.switch).forEach(function (name) {
    var sel = document.querySelector(having(ATTR.switch, name));
    var v = q.get(name);
    if (sel && v !== null && page.switch[name].indexOf(v) >= 0) sel.value = v;
  });
  return { scenario: scenarioFromSelects(), sliders: sliders };
}

// Every control whose value is not the page's default (and not given by the URL), put back to
// its default: [{control, value}].
function movedControls() {
  var q = new URLSearchParams(location.search), out = [];
  Array.prototype.forEach.call(document.querySelectorAll(dot(CLS.controls) + " input" + having(ATTR.param) + ", select" + having(ATTR.switch)),
    function (c) {
      var isSelect = c.tagName === "SELECT", name = c.getAttribute(isSelect ? ATTR.switch : ATTR.param);
      if (q.has(name)) return;
      var def = isSelect ? (Array.prototype.find.call(c.options, function (o) { return o.defaultSelected; }) ||
        c.options[0]).value : c.defaultValue;
      if (isSelect ? c.value === def : +c.value === +def) return; // "0.8" is the value="0.80" it was built with
      out.push({ control: c, value: c.value });
      c.value = def;
    });
  return out;
}

function isDefault() {
  if (state.scenario !== page.default) return false;
  return Object.keys(state.sliders).every(function (name) {
    var input = inputs(name)[0];
    var def = input ? +input.defaultValue : (page.sliders[name] || {}).default;
    return state.sliders[name] === def;
  });
}

function writeURL() {
  var q = new URLSearchParams(location.search);
  Object.keys(state.sliders).forEach(function (name) {
    var input = inputs(name)[0];
    var def = input ? +input.defaultValue : (page.sliders[name] || {}).default;
    if (state.sliders[name] === def) q.delete(name); else q.set(name, state.sliders[name]);
  });
  Object.keys(page.switch).forEach(function (name) {
    var sel = document.querySelector(having(ATTR.switch, name));
    if (!sel) return; // only choices other than the page's default go into the URL
    if (sel.value === sel.getAttribute(ATTR.default)) q.delete(name); else q.set(name, sel.value);
  });
  var search = q.toString();
  var url = location.pathname + (search ? "?" + search : "") + location.hash;
  if (url !== location.pathname + location.search + location.hash) history.replaceState(history.state, "", url);
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

function writeURLSoon() {
  // history.replaceState costs a few milliseconds in Chromium: write once the reader pauses.
  afterPause("url", PAUSE_MS, writeURL);
}

function showControls() {
  Object.keys(state.sliders).forEach(function (name) {
    inputs(name).forEach(function (input) {
      input.value = state.sliders[name];
      var out = input.parentNode.querySelector("output");
      if (out) out.textContent = input.value;
    });
  });
}

// -- numbers in the prose --------------------------------------------------------------
// A slider's position along its values; precomputed texts are laid out in C order over
// the sliders (and the scenario, FACTS.scenario) they depend on.
function sliderIndex(name) {
  var s = page.sliders[name];
  return { size: s.count, pos: positionOf(s, state.sliders[name]) };
}

function flatIndex(deps, scenarioIndex) {
  var index = 0;
  for (var d = 0; d < deps.length; d++) {
    var at = deps[d] === FACTS.scenario ? scenarioIndex : sliderIndex(deps[d]);
    index = index * at.size + at.pos;
  }
  return index;
}

// While a reader drags a slider, the numbers on screen (and half a screen around) follow every
// move; the others, which would only reflow text nobody sees, once the reader pauses, or as
// soon as they come near the screen.
var near = new Set(); // number spans on or near the screen
var nearObserver = null;
var farStale = false; // some span away from the screen shows an earlier position

function watchNumbers() {
  if (nearObserver) nearObserver.disconnect();
  near.clear();
  farStale = false;
  if (!window.IntersectionObserver) return;
  nearObserver = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (!e.isIntersecting) { near.delete(e.target); return; }
      near.add(e.target);
      if (farStale && state) renderNumber(e.target, currentScenario());
    });
  }, { rootMargin: "50% 0px" });
  Array.prototype.forEach.call(document.querySelectorAll(having(ATTR.num)), function (el) { nearObserver.observe(el); });
}

function currentScenario() {
  return { size: page.scenarios.length, pos: Math.max(0, scenarioIndex(state.scenario)) };
}

function renderNumber(span, scenario) {
  var n = page.numbers[span.getAttribute(ATTR.num)];
  if (!n) return;
  var text = n.texts[flatIndex(n.deps, scenario)];
  if (text !== undefined && span.textContent !== text) {
    span.textContent = text;
    changed.add(span);
  }
}

// Every number on the page, or (nearOnly) those on or near the screen.
function renderNumbers(nearOnly) {
  var spans = document.querySelectorAll(having(ATTR.num)), scenario = currentScenario();
  var skipped = false;
  for (var i = 0; i < spans.length; i++) {
    if (nearOnly && nearObserver && !near.has(spans[i])) { skipped = true; continue; }
    renderNumber(spans[i], scenario);
  }
  farStale = skipped;
  if (!nearOnly) cancel("numbers");
}

function renderNumbersSoon() {
  renderNumbers(true);
  if (farStale) afterPause("numbers", PAUSE_MS, function () { renderNumbers(false); });
}

// -- what a screen reader hears ----------------------------------------------------------
// Each figure's description is filled from its template with the current position's
// precomputed texts, once the reader pauses (a drag need not rewrite hidden text every frame).
// Once the reader pauses longer, one polite announcement says the sentences whose numbers
// changed, or, if none did, the description of the figure they moved.
var changed = new Set();
var moved = null; // the figure whose slider moved last
var undescribed = new Set(); // figures whose description waits for the pause
var MAX_SENTENCES = 3;

function describeSoon(fig) {
  undescribed.add(fig);
  afterPause("describe", PAUSE_MS, describePending);
}

function describePending() {
  cancel("describe");
  undescribed.forEach(describeFigure);
  undescribed.clear();
}

function describeFigure(fig) {
  var d = fig.payload && fig.payload.describe, el = fig.el.querySelector(dot(CLS.desc));
  if (!d || !el) return;
  var key = fig.payload.map[state.scenario] || fig.payload.default, values = d.values[key];
  if (!values) return;
  var text = d.template.replace(/\{(\w+)\}/g, function (all, name) {
    var v = values[name];
    return v ? v.texts[flatIndex(v.deps)] : all;
  });
  if (el.textContent !== text) el.textContent = text;
}

// The sentence holding `span`, as read: hover cards (citations, glossary) are left out.
function sentenceAround(span) {
  var block = span.closest("p, li, dd, td, th, figcaption, h1, h2, h3, h4") || span.parentNode;
  var walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT, {
    acceptNode: function (node) {
      return node.parentNode.closest(dot(CLS.card) + ", .headerlink") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT;
    }
  });
  var text = "", from = -1, to = -1, node;
  while ((node = walker.nextNode())) {
    if (from < 0 && span.contains(node)) from = text.length;
    text += node.data;
    if (span.contains(node)) to = text.length;
  }
  if (from < 0) return "";
  var start = 0, end = text.length, stop = /[.!?]["\u201d\u2019)]*\s+/g, m;
  while ((m = stop.exec(text))) {
    var after = m.index + m[0].length;
    if (after <= from) start = after;
    else if (m.index >= to) { end = m.index + m[0].replace(/\s+$/, "").length; break; }
  }
  return text.slice(start, end).replace(/\s+/g, " ").trim();
}

function announceSoon() {
  afterPause("announce", 500, announce);
}

function announce() {
  describePending();
  if (farStale) renderNumbers(false);
  var region = document.querySelector(dot(CLS.announce));
  var said = [];
  // In reading order; a scenario change can touch every paragraph, so say the first few.
  var spans = Array.prototype.filter.call(document.querySelectorAll(having(ATTR.num)), function (el) { return changed.has(el); });
  var more = 0;
  spans.forEach(function (span) {
    var sentence = sentenceAround(span);
    if (!sentence || said.indexOf(sentence) >= 0) return;
    if (said.length < MAX_SENTENCES) said.push(sentence); else more++;
  });
  if (more) said.push("(" + more + " more sentence" + (more === 1 ? "" : "s") + " on the page changed.)");
  changed.clear();
  if (!said.length && moved) {
    var desc = moved.el.querySelector(dot(CLS.desc));
    if (desc) said.push(desc.textContent);
  }
  moved = null;
  if (!region || !said.length) return;
  var text = said.join(" ");
  // The same words again would not be read out: vary them invisibly.
  region.textContent = region.textContent === text ? text + "\u00a0" : text;
}

// -- figures -------------------------------------------------------------------------
function dataFor(fig) {
  var p = fig.payload, key = p.map[state.scenario] || p.default;
  if (key === p.default) return Promise.resolve(p.data);
  // A variant file holds several scenarios' rows by key (contract.variant_files).
  return fetchJSON(new URL(p.variants[key], fig.url).href).then(function (rows) {
    if (!rows[key]) throw new Error(p.variants[key] + " holds no rows for " + key);
    return rows[key];
  });
}

// The spec names its colours by the palette's light values; the page's CSS variables hold
// the current scheme's, so the live view matches the static picture in either scheme.
function recolour(vega, palette) {
  var css = getComputedStyle(document.body), text = JSON.stringify(vega);
  Object.keys(palette || {}).forEach(function (light) {
    var value = css.getPropertyValue(palette[light]).trim();
    if (value) text = text.split('"' + light + '"').join(JSON.stringify(value));
  });
  return JSON.parse(text);
}

// Vega measures text when it lays a chart out: the chart font must be there first.
var fontsReady = null;
function chartFonts() {
  if (!fontsReady) {
    fontsReady = document.fonts && document.fonts.load
      ? Promise.all(FACTS.font.weights.map(function (w) { return document.fonts.load(w + ' 12px "' + FACTS.font.family + '"'); }))
          .catch(function () {})
      : Promise.resolve();
  }
  return fontsReady;
}

function embed(fig, gen) {
  return Promise.all([fetchJSON(fig.url), chartFonts()]).then(function (got) {
    fig.payload = checked("figure " + fig.url, got[0]);
    describeFigure(fig);
    return dataFor(fig);
  }).then(function (cols) {
    if (gen !== generation) return;
    if (fig.result) { fig.result.finalize(); fig.result = null; }
    var still = fig.el.querySelector(dot(CLS.static));
    var height = still ? still.getBoundingClientRect().height : 0;
    if (height && !fig.view.style.minHeight) {
      fig.view.style.minHeight = height + "px"; // keep the text below in place
    }
    fig.el.classList.add(CLS.live); // the view needs its width before Vega measures it
    // Compiled to Vega at build time, so nothing is compiled here. The page's own controls
    // set the params that the Vega-Lite spec binds to range inputs.
    var spec = recolour(fig.payload.vega, fig.payload.palette);
    spec.data.forEach(function (d) { if (d.name === "table") d.values = rows(cols); });
    (spec.signals || []).forEach(function (sig) {
      if (fig.params.indexOf(sig.name) >= 0 && sig.name in state.sliders) sig.value = state.sliders[sig.name];
    });
    // Canvas: a slider move redraws a bitmap instead of rebuilding hundreds of SVG nodes
    // (Vega scales it by devicePixelRatio, and redraws when that changes).
    var options = { mode: "vega", actions: false, renderer: "canvas", tooltip: { theme: scheme() } };
    return window.vegaEmbed(fig.view, spec, options).then(function (result) {
      if (gen !== generation) { result.finalize(); return; }
      name(fig);
      fig.result = result;
    });
  });
}

// A canvas says nothing to a screen reader: the view is one image, named like the static
// picture it replaces. Vega made the view's element a "graphics-document" labelled by the
// spec's description; it becomes role="img" with the page's own name (the aria-label that
// explainer_gen/render/blocks.py's figure_html gives the view,
// else the caption) and the figure's description, which describeFigure keeps current.
function name(fig) {
  var v = fig.view, caption = fig.el.querySelector("figcaption"), desc = fig.el.querySelector(dot(CLS.desc));
  v.setAttribute("role", "img");
  v.removeAttribute("aria-roledescription");
  if (fig.label) v.setAttribute("aria-label", fig.label);
  else if (caption && caption.id) { v.removeAttribute("aria-label"); v.setAttribute("aria-labelledby", caption.id); }
  if (desc && desc.id) v.setAttribute("aria-describedby", desc.id);
}

function schedule(fig) {
  if (fig.queued || fig.result) return;
  fig.queued = true;
  queue.push(fig);
  drain();
}

function drain() {
  if (draining) return;
  draining = true;
  var gen = generation;
  loadBundle().then(function step() {
    var fig = queue.shift();
    if (!fig || gen !== generation) { draining = false; return; }
    return embed(fig, gen).then(nextTask).then(step); // one figure per task
  }).catch(function (err) { draining = false; report(err); });
}

function onInput(event) {
  var input = event.target, name = input.getAttribute(ATTR.param);
  if (!name) return;
  var value = +input.value;
  if (state.sliders[name] === value) return;
  state.sliders[name] = value;
  inputs(name).forEach(function (other) {
    if (other !== input) other.value = value;
    var out = other.parentNode.querySelector("output");
    if (out) out.textContent = other.value;
  });
  var own = input.closest(dot(CLS.figure));
  figures.forEach(function (fig) {
    if (fig.params.indexOf(name) < 0) return;
    if (own === fig.el) moved = fig;
    if (fig.result) fig.result.view.signal(name, value).runAsync();
    else schedule(fig); // its static image shows the default state: bring it to life
    describeSoon(fig);
  });
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

function retheme() {
  var gen = generation;
  figures.forEach(function (fig) { if (fig.result) embed(fig, gen).catch(report); });
}

function report(err) { console.error("explainer-gen:", err); }

// -- page lifecycle ------------------------------------------------------------------
function teardown() {
  generation++;
  Object.keys(timers).forEach(cancel);
  undescribed.clear();
  if (nearObserver) { nearObserver.disconnect(); nearObserver = null; }
  near.clear();
  farStale = false;
  inputCache = {};
  WAKE.forEach(function (type) { window.removeEventListener(type, wake, true); });
  wake = function () {};
  changed.clear();
  moved = null;
  figures.forEach(function (fig) { if (fig.result) fig.result.finalize(); });
  figures = [];
  queue = [];
  draining = false;
  page = null;
  state = null;
}

function init() {
  teardown();
  var gen = generation;
  var root = document.querySelector(dot(CLS.page) + having(ATTR.page));
  if (!root) return;
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
    WAKE.forEach(function (type) { window.removeEventListener(type, wake, true); });
    start(gen, root);
  };
  if (location.search) wake();
  else WAKE.forEach(function (type) { window.addEventListener(type, wake, { capture: true, passive: true }); });
}

function start(gen, root) {
  fetchJSON(resolve(root, ATTR.page)).then(function (info) {
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
  }).catch(report);
}

new MutationObserver(retheme).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
window.explainerGen = {
  figures: function () { return figures.filter(function (f) { return f.result; }); },
  state: function () { return state; },
  facts: function () { return FACTS; }
};

if (window.document$ && typeof window.document$.subscribe === "function") {
  window.document$.subscribe(init); // Material: fires now and after every instant navigation
} else if (document.readyState === "loading") {
  document.addEventListener("DOMContentLoaded", init);
} else {
  init();
}
