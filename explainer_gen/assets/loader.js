/* explainer-gen: brings precomputed figures to life and keeps the page's numbers in step.
 * Everything the page shows was computed at build time; this file only picks rows.
 *
 * The page works before this runs: each figure is a static SVG coloured by the page's CSS
 * variables, with its controls in the HTML. This file wires the controls to the prose numbers and the
 * URL, and swaps a figure for a live Vega view only when a reader reaches for it (pointer,
 * focus, touch, a control, a scenario change, or a shared link's state), one figure per
 * task, so a reader who only reads never pays for Vega.
 * It runs once per tab, then on every page that Material's instant navigation shows. */
(function () {
  "use strict";
  if (window.__explainerGen) return; // re-created by instant navigation: already running
  window.__explainerGen = true;

  var generation = 0; // bumps on every page change; stale async work checks it and stops
  var figures = []; // {el, view, url, payload, result, params: [names]}
  var page = null; // this page's JSON: switch, scenarios, sliders, numbers
  var state = null; // {scenario: key, sliders: {name: value}}
  var INTENT = ["pointerenter", "focusin", "touchstart"]; // a reader reaching for a figure
  var queue = [];
  var draining = false;
  var jsonCache = new Map();
  var bundle = null;
  var bundleUrl = null;

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
  function sliderOf(input) {
    return { min: +input.min, step: +input.step, max: +input.max };
  }

  function snap(s, value) {
    var count = Math.round((s.max - s.min) / s.step) + 1;
    var i = Math.max(0, Math.min(count - 1, Math.round((value - s.min) / s.step)));
    var decimals = (String(s.step).split(".")[1] || "").length;
    return +(s.min + i * s.step).toFixed(decimals);
  }

  function scenarioFromSelects() {
    var names = Object.keys(page.switch), index = 0;
    for (var i = 0; i < names.length; i++) {
      var choices = page.switch[names[i]].map(String);
      var sel = document.querySelector('[data-eg-switch="' + names[i] + '"]');
      var pos = sel ? choices.indexOf(sel.value) : 0;
      index = index * choices.length + Math.max(0, pos);
    }
    return page.scenarios[index] || page.default;
  }

  function inputs(name) {
    return Array.prototype.slice.call(document.querySelectorAll('.eg-controls input[data-eg-param="' + name + '"]'));
  }

  function initialState() {
    var q = new URLSearchParams(location.search), sliders = {};
    Array.prototype.forEach.call(document.querySelectorAll(".eg-controls input[data-eg-param]"), function (input) {
      var name = input.getAttribute("data-eg-param");
      if (name in sliders) return;
      var v = parseFloat(q.get(name));
      sliders[name] = isFinite(v) ? snap(sliderOf(input), v) : +input.defaultValue;
    });
    Object.keys(page.sliders).forEach(function (name) {
      if (name in sliders) return;
      var s = page.sliders[name], v = parseFloat(q.get(name));
      sliders[name] = isFinite(v) ? snap({ min: s.min, step: s.step, max: s.min + s.step * (s.count - 1) }, v) : s.default;
    });
    Object.keys(page.switch).forEach(function (name) {
      var sel = document.querySelector('[data-eg-switch="' + name + '"]');
      var v = q.get(name);
      if (sel && v !== null && page.switch[name].map(String).indexOf(v) >= 0) sel.value = v;
    });
    return { scenario: scenarioFromSelects(), sliders: sliders };
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
      var sel = document.querySelector('[data-eg-switch="' + name + '"]');
      if (!sel) return; // only choices other than the page's default go into the URL
      if (sel.value === sel.getAttribute("data-eg-default")) q.delete(name); else q.set(name, sel.value);
    });
    var search = q.toString();
    var url = location.pathname + (search ? "?" + search : "") + location.hash;
    if (url !== location.pathname + location.search + location.hash) history.replaceState(history.state, "", url);
  }

  var urlTimer = null;
  function writeURLSoon() {
    // history.replaceState costs a few milliseconds in Chromium: write once the reader pauses.
    var gen = generation;
    clearTimeout(urlTimer);
    urlTimer = setTimeout(function () { if (gen === generation) writeURL(); }, 150);
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
  function renderNumbers() {
    var spans = document.querySelectorAll("[data-eg-num]");
    for (var i = 0; i < spans.length; i++) {
      var n = page.numbers[spans[i].getAttribute("data-eg-num")];
      if (!n) continue;
      var index = 0;
      for (var d = 0; d < n.deps.length; d++) {
        var dep = n.deps[d], size, pos;
        if (dep === "scenario") {
          size = page.scenarios.length;
          pos = page.scenarios.indexOf(state.scenario);
        } else {
          var s = page.sliders[dep];
          size = s.count;
          pos = Math.round((state.sliders[dep] - s.min) / s.step);
        }
        index = index * size + Math.max(0, Math.min(size - 1, pos));
      }
      var text = n.texts[index];
      if (text !== undefined && spans[i].textContent !== text) spans[i].textContent = text;
    }
  }

  // -- figures -------------------------------------------------------------------------
  function dataFor(fig) {
    var p = fig.payload, key = p.map[state.scenario] || p.default;
    if (key === p.default) return Promise.resolve(p.data);
    return fetchJSON(new URL(p.variants[key], fig.url).href);
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
        ? Promise.all([document.fonts.load('12px "Explainer Sans"'), document.fonts.load('600 12px "Explainer Sans"')])
            .catch(function () {})
        : Promise.resolve();
    }
    return fontsReady;
  }

  function embed(fig, gen) {
    return Promise.all([fetchJSON(fig.url), chartFonts()]).then(function (got) {
      fig.payload = got[0];
      return dataFor(fig);
    }).then(function (cols) {
      if (gen !== generation) return;
      if (fig.result) { fig.result.finalize(); fig.result = null; }
      var still = fig.el.querySelector(".eg-static");
      var height = still ? still.getBoundingClientRect().height : 0;
      if (height && !fig.view.style.minHeight) {
        fig.view.style.minHeight = height + "px"; // keep the text below in place
      }
      fig.el.classList.add("eg-live"); // the view needs its width before Vega measures it
      // Compiled to Vega at build time, so nothing is compiled here. The page's own controls
      // set the params that the Vega-Lite spec binds to range inputs.
      var spec = recolour(fig.payload.vega, fig.payload.palette);
      spec.data.forEach(function (d) { if (d.name === "table") d.values = rows(cols); });
      (spec.signals || []).forEach(function (sig) {
        if (fig.params.indexOf(sig.name) >= 0 && sig.name in state.sliders) sig.value = state.sliders[sig.name];
      });
      var options = { mode: "vega", actions: false, renderer: "svg", tooltip: { theme: scheme() } };
      return window.vegaEmbed(fig.view, spec, options).then(function (result) {
        if (gen !== generation) { result.finalize(); return; }
        fig.result = result;
      });
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

  function onInput(event) {
    var input = event.target, name = input.getAttribute("data-eg-param");
    if (!name) return;
    var value = +input.value;
    if (state.sliders[name] === value) return;
    state.sliders[name] = value;
    inputs(name).forEach(function (other) {
      if (other !== input) other.value = value;
      var out = other.parentNode.querySelector("output");
      if (out) out.textContent = other.value;
    });
    figures.forEach(function (fig) {
      if (fig.params.indexOf(name) < 0) return;
      if (fig.result) fig.result.view.signal(name, value).runAsync();
      else schedule(fig); // its static image shows the default state: bring it to life
    });
    renderNumbers();
    writeURLSoon();
  }

  function onScenario() {
    var gen = generation;
    state.scenario = scenarioFromSelects();
    renderNumbers();
    writeURLSoon();
    figures.forEach(function (fig) {
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
    clearTimeout(urlTimer);
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
    var root = document.querySelector(".eg-page[data-eg-page]");
    if (!root) return;
    bundleUrl = resolve(root, "data-eg-bundle");
    figures = Array.prototype.slice.call(document.querySelectorAll(".eg-figure[data-eg-figure]")).map(function (el) {
      var params = Array.prototype.map.call(el.querySelectorAll(".eg-controls input[data-eg-param]"),
        function (input) { return input.getAttribute("data-eg-param"); });
      return { el: el, view: el.querySelector(".eg-view"), url: resolve(el, "data-eg-figure"),
               payload: null, result: null, params: params, wanted: false };
    });
    // Listen for a reader reaching for a figure from the start; what arrives before the
    // page's state is known is remembered and acted on once it is.
    figures.forEach(function (fig) {
      function want() { fig.wanted = true; if (state) schedule(fig); }
      INTENT.forEach(function (type) { fig.el.addEventListener(type, want, { once: true, passive: true }); });
    });
    fetchJSON(resolve(root, "data-eg-page")).then(function (info) {
      if (gen !== generation) return;
      page = info;
      state = initialState();
      showControls();
      root.addEventListener("change", onScenario);
      Array.prototype.forEach.call(document.querySelectorAll(".eg-controls"), function (c) {
        c.addEventListener("input", onInput);
      });
      renderNumbers();
      var shared = !isDefault(); // a shared link: its state differs from every static image
      figures.forEach(function (fig) {
        // Until a reader reaches for a figure, its static image is the chart: no Vega needed.
        if (shared || fig.wanted || fig.el.matches(":hover") || fig.el.contains(document.activeElement)) schedule(fig);
      });
    }).catch(report);
  }

  new MutationObserver(retheme).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  window.explainerGen = {
    figures: function () { return figures.filter(function (f) { return f.result; }); },
    state: function () { return state; }
  };

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init); // Material: fires now and after every instant navigation
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
