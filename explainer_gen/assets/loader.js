/* explainer-gen: draws precomputed figures and keeps the page's numbers in step with them.
 * Everything the page shows was computed at build time; this file only picks rows.
 * It runs once per browser tab, then on every page Material's instant navigation shows. */
(function () {
  "use strict";
  if (window.__explainerGen) return; // re-created by instant navigation: already running
  window.__explainerGen = true;

  var generation = 0; // bumps on every page change; stale async work checks it and stops
  var figures = [];
  var page = null; // this page's JSON: switch, scenarios, sliders, numbers
  var state = null; // {scenario: key, sliders: {name: value}}
  var jsonCache = new Map();
  var bundle = null;

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

  function loadBundle(url) {
    if (window.vegaEmbed) return Promise.resolve();
    if (!bundle) {
      bundle = new Promise(function (ok, fail) {
        var s = document.createElement("script");
        s.src = url;
        s.onload = ok;
        s.onerror = function () { bundle = null; fail(new Error("could not load " + url)); };
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

  // -- state and the URL --------------------------------------------------------------
  function snap(s, value) {
    var i = Math.round((value - s.min) / s.step);
    i = Math.max(0, Math.min(s.count - 1, i));
    return +(s.min + i * s.step).toFixed(s.decimals);
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

  function initialState() {
    var q = new URLSearchParams(location.search), sliders = {};
    Object.keys(page.sliders).forEach(function (name) {
      var s = page.sliders[name], v = parseFloat(q.get(name));
      sliders[name] = isFinite(v) ? snap(s, v) : s.default;
    });
    Object.keys(page.switch).forEach(function (name) {
      var sel = document.querySelector('[data-eg-switch="' + name + '"]');
      var v = q.get(name);
      if (sel && v !== null && page.switch[name].map(String).indexOf(v) >= 0) sel.value = v;
    });
    return { scenario: scenarioFromSelects(), sliders: sliders };
  }

  function writeURL() {
    var q = new URLSearchParams(location.search);
    Object.keys(state.sliders).forEach(function (name) {
      var s = page.sliders[name];
      if (s && state.sliders[name] === s.default) q.delete(name); else q.set(name, state.sliders[name]);
    });
    Object.keys(page.switch).forEach(function (name) {
      var sel = document.querySelector('[data-eg-switch="' + name + '"]');
      if (!sel) return; // only choices other than the page's default go into the URL
      if (sel.value === String(sel.getAttribute("data-eg-default"))) q.delete(name); else q.set(name, sel.value);
    });
    var search = q.toString();
    var url = location.pathname + (search ? "?" + search : "") + location.hash;
    if (url !== location.pathname + location.search + location.hash) history.replaceState(history.state, "", url);
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

  function boundParams(spec) {
    return (spec.params || []).filter(function (p) { return p.bind; });
  }

  function embed(fig, gen) {
    return dataFor(fig).then(function (cols) {
      if (gen !== generation) return;
      var spec = JSON.parse(JSON.stringify(fig.payload.spec));
      spec.datasets = Object.assign({}, spec.datasets, { table: rows(cols) });
      boundParams(spec).forEach(function (p) {
        if (p.name in state.sliders) p.value = state.sliders[p.name];
      });
      if (fig.result) { fig.result.finalize(); fig.result = null; }
      var theme = scheme();
      fig.el.classList.add("eg-live"); // the view needs its width before vega measures it
      return window.vegaEmbed(fig.view, spec, {
        actions: false, renderer: "svg", config: fig.payload.themes[theme], tooltip: { theme: theme }
      }).then(function (result) {
        if (gen !== generation) { result.finalize(); return; }
        fig.result = result;
        boundParams(spec).forEach(function (p) {
          if (!(p.name in state.sliders)) state.sliders[p.name] = p.value;
          result.view.addSignalListener(p.name, function (name, value) { onSlider(name, value, fig); });
        });
      });
    });
  }

  function onSlider(name, value, source) {
    if (state.sliders[name] === value) return;
    state.sliders[name] = value;
    figures.forEach(function (fig) {
      if (fig === source || !fig.result) return;
      if (boundParams(fig.payload.spec).some(function (p) { return p.name === name; })) {
        fig.result.view.signal(name, value).runAsync();
      }
    });
    renderNumbers();
    writeURL();
  }

  function onScenario() {
    var gen = generation;
    state.scenario = scenarioFromSelects();
    renderNumbers();
    writeURL();
    figures.forEach(function (fig) {
      if (!fig.result) return;
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
    figures.forEach(function (fig) { if (fig.result) fig.result.finalize(); });
    figures = [];
    page = null;
    state = null;
  }

  function init() {
    teardown();
    var gen = generation;
    var root = document.querySelector(".eg-page[data-eg-page]");
    if (!root) return;
    var els = Array.prototype.slice.call(document.querySelectorAll(".eg-figure[data-eg-figure]"));
    fetchJSON(resolve(root, "data-eg-page")).then(function (info) {
      if (gen !== generation) return;
      page = info;
      state = initialState();
      var form = root.querySelector(".eg-scenario");
      if (form) {
        form.hidden = false;
        form.addEventListener("change", onScenario);
      }
      renderNumbers();
      if (!els.length) return;
      return loadBundle(resolve(root, "data-eg-bundle")).then(function () {
        if (gen !== generation) return;
        figures = els.map(function (el) {
          return { el: el, view: el.querySelector(".eg-view"), url: resolve(el, "data-eg-figure"), payload: null, result: null };
        });
        return Promise.all(figures.map(function (fig) {
          return fetchJSON(fig.url).then(function (payload) {
            fig.payload = payload;
            return embed(fig, gen);
          });
        }));
      });
    }).catch(report);
  }

  new MutationObserver(retheme).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
  window.explainerGen = { figures: function () { return figures; }, state: function () { return state; } };

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init); // Material: fires now and after every instant navigation
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
