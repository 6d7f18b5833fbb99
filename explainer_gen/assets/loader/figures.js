/* explainer-gen's loader: figures going live and following the reader. A figure's static picture
 * gives way to a live Vega view when a reader reaches for it; the Vega bundle is fetched for the
 * first, and the figures are brought to life one per task. While a reader moves a slider, the
 * views near the screen follow every move, and the others catch up as they come near it or once
 * the reader pauses. */

var queue = [];
var draining = false;
var bundle = null;
var bundleUrl = null;

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

// The figure's rows for `scenario` (the reader's, by default).
function dataFor(fig, scenario) {
  var p = fig.payload, key = p.map[scenario === undefined ? state.scenario : scenario] || p.default;
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

// The figure's live view, made (or made again: another scheme, another layout) at the reader's
// state. A later call for the same figure supersedes an earlier one still on its way, and what
// the reader moved while the view was being made is applied to it once it is there.
function embed(fig, gen) {
  var token = fig.embedding = {};
  var made = { scenario: null, sliders: {}, scheme: null }; // the state the view is made at
  return Promise.all([fetchJSON(fig.url), chartFonts()]).then(function (got) {
    if (gen !== generation || fig.embedding !== token) return null; // the page changed while it came
    fig.payload = checked("figure " + fig.url, got[0]);
    describeFigure(fig);
    made.scenario = state.scenario;
    return dataFor(fig, made.scenario);
  }).then(function (cols) {
    if (gen !== generation || fig.embedding !== token) return;
    if (fig.result) {
      // Drawn again: the view keeps its height until the new one is drawn, so nothing below moves twice.
      fig.view.style.minHeight = fig.view.getBoundingClientRect().height + "px";
      fig.holding = true;
      fig.result.finalize();
      fig.result = null;
    } else if (!fig.holding) {
      var still = shownStill(fig);
      var height = still ? still.getBoundingClientRect().height : 0;
      if (height && !fig.view.style.minHeight) {
        fig.view.style.minHeight = height + "px"; // keep the text below in place
      }
    }
    fig.el.classList.add(CLS.live); // the view needs its width before Vega measures it
    // The layout the page's CSS gives the figure, whose static picture it has shown (layoutFor).
    fig.layout = layoutFor(fig);
    // Compiled to Vega at build time, so nothing is compiled here. The page's own controls
    // set the params that the Vega-Lite spec binds to range inputs.
    var spec = recolour(fig.layout === "narrow" ? fig.payload.narrow : fig.payload.vega, fig.payload.palette);
    made.scheme = scheme();
    spec.data.forEach(function (d) { if (d.name === "table") d.values = rows(cols); });
    (spec.signals || []).forEach(function (sig) {
      if (fig.params.indexOf(sig.name) >= 0 && sig.name in state.sliders) sig.value = made.sliders[sig.name] = state.sliders[sig.name];
    });
    // Canvas: a slider move redraws a bitmap instead of rebuilding hundreds of SVG nodes
    // (Vega scales it by devicePixelRatio, and redraws when that changes).
    var options = { mode: "vega", actions: false, renderer: "canvas", tooltip: { theme: scheme() } };
    return window.vegaEmbed(fig.view, spec, options).then(function (result) {
      if (gen !== generation || fig.embedding !== token) { result.finalize(); return; }
      name(fig);
      fig.result = result;
      if (fig.holding) { fig.view.style.minHeight = ""; fig.holding = false; }
      // The scheme or the width changed meanwhile: made again; else what the reader moved, applied.
      if (made.scheme !== scheme() || fig.layout !== layoutFor(fig)) return embed(fig, gen);
      catchUp(fig, made, gen);
    }, function (err) {
      // No view: the figure shows its picture again, and a reader's next reach tries anew.
      if (fig.embedding === token) {
        fig.el.classList.remove(CLS.live);
        fig.view.style.minHeight = "";
        fig.holding = fig.queued = false;
      }
      throw err;
    });
  });
}

// What the reader changed while the figure's view was being made (`made`: the scenario and the
// sliders it was made at), applied to it.
function catchUp(fig, made, gen) {
  var view = fig.result.view, moved = false;
  Object.keys(made.sliders).forEach(function (name) {
    if (state.sliders[name] !== made.sliders[name]) { view.signal(name, state.sliders[name]); moved = true; }
  });
  if (moved) view.runAsync();
  if (state.scenario !== made.scenario) {
    dataFor(fig).then(function (cols) {
      if (gen !== generation || !fig.result || fig.result.view !== view) return;
      view.data("table", rows(cols)).runAsync();
    }).catch(report);
  }
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

// While a reader moves a slider, the figures it drives whose views show on the screen (and the one
// whose slider it is) follow every move; a figure whose view is off the screen, whose drawing
// nobody sees, is brought up to the reader's state as soon as any of it shows (its run is done
// before the next frame), or once the reader pauses. (A number is followed half a screen ahead,
// numbers.js: a text that changes reflows what is below it, a drawing does not.)
var nearFigures = null; // the figures' nearWatcher (base.js)
var behind = new Set(); // figures away from the screen that do not show the reader's sliders yet

function watchFigures() {
  nearFigures = nearWatcher("0px", function (view) {
    for (var i = 0; i < figures.length; i++) if (figures[i].view === view && behind.has(figures[i])) follow(figures[i]);
  });
  figures.forEach(function (fig) { nearFigures.observe(fig.view); });
}

// The reader moved the slider `name` (of the figure `own`, or of the page): the figures it drives follow.
function followSliders(name, own) {
  var far = false;
  figures.forEach(function (fig) {
    if (fig.params.indexOf(name) < 0) return;
    if (fig.el === own || !nearFigures || nearFigures.isNear(fig.view)) follow(fig);
    else { behind.add(fig); far = true; }
  });
  if (far) afterPause("figures", PAUSE_MS, function () { behind.forEach(follow); });
}

// The figure at the reader's sliders: a live view gets their values and runs, at most once per
// animation frame (a second move within one frame runs at the next, with the latest values); a
// figure not yet live is brought to life, at the reader's state.
function follow(fig) {
  behind.delete(fig);
  if (!fig.result) { schedule(fig); return; }
  var view = fig.result.view, moved = false;
  fig.params.forEach(function (name) {
    if (name in state.sliders && view.signal(name) !== state.sliders[name]) {
      view.signal(name, state.sliders[name]);
      moved = true;
    }
  });
  if (!moved) return;
  if (fig.framed) { fig.rerun = true; return; }
  fig.framed = true;
  view.runAsync();
  requestAnimationFrame(function () {
    fig.framed = false;
    if (fig.rerun && fig.result && fig.result.view === view) view.runAsync();
    fig.rerun = false;
  });
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

function retheme() {
  var gen = generation;
  figures.forEach(function (fig) { if (fig.result) embed(fig, gen).catch(report); });
}

// A live figure whose layout the page's CSS has changed (a phone turned, a window resized, so
// the figure's width crossed the layouts' border) is drawn again in its new layout, one figure
// per task. The figures are watched for it from the page's start (lifecycle.js, init).
function relayout() {
  var gen = generation;
  // A figure with no box (hidden in a closed block) has no layout to change to: it is looked at
  // again when it shows, as the observer then reports its new size.
  function due(fig) { return fig.result && fig.el.getClientRects().length && fig.layout !== layoutFor(fig); }
  figures.filter(due).reduce(function (before, fig) {
    return before.then(function () { return gen === generation && due(fig) ? embed(fig, gen).then(nextTask) : null; });
  }, Promise.resolve()).catch(report);
}

var resized = window.ResizeObserver ? new ResizeObserver(function () { afterPause("relayout", PAUSE_MS, relayout); }) : null;

// A new page: its figures are other elements; the ones left are let go.
function resetFigures() {
  if (resized) resized.disconnect();
  if (nearFigures) { nearFigures.disconnect(); nearFigures = null; }
  behind.clear();
  figures.forEach(function (fig) { if (fig.result) fig.result.finalize(); });
  figures = [];
  queue = [];
  draining = false;
}
