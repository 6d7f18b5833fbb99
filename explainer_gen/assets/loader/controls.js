/* explainer-gen's loader: the controls and the URL. The reader's state (the scenario the
 * switch's selects choose, each slider's value) is read from the controls and a shared link's
 * query, snapped to the positions the page state lists, shown on the controls and written back to
 * the URL once the reader pauses. */

// A slider's place among its positions, and the position at a place: `s` is the page state's
// slider ({min, step, count, decimals}, computed by the build for every slider of the page).
function positionOf(s, value) {
  return Math.max(0, Math.min(s.count - 1, Math.round((value - s.min) / s.step)));
}

function snap(s, value) {
  return +(s.min + positionOf(s, value) * s.step).toFixed(s.decimals);
}

// A slider's value as its <output> shows it: to the slider's decimals, as the build wrote it
// (render/blocks.py, controls_html), so "0.80" stays "0.80" when the reader moves it.
function shownValue(name, value) {
  var s = page && page.sliders[name];
  return s ? (+value).toFixed(s.decimals) : String(value);
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

// Whether the reader's state is the page's as built: in all (isDefault), or in what one number
// depends on (atDefault: the switch, FACTS.scenario, or a slider's name).
function atDefault(dep) {
  if (dep === FACTS.scenario) return state.scenario === page.default;
  var input = inputs(dep)[0];
  var def = input ? +input.defaultValue : (page.sliders[dep] || {}).default;
  return state.sliders[dep] === def;
}

// Before the page's state is known: whether the address asks for some control's setting (a shared
// link, whose state is on its way); otherwise the page shows the state it was built at.
function addressMovesControls() {
  return Array.from(new URLSearchParams(location.search).keys()).some(function (key) {
    return inputs(key).length > 0 || !!document.querySelector("select" + having(ATTR.switch, key));
  });
}

function isDefault() {
  return atDefault(FACTS.scenario) && Object.keys(state.sliders).every(atDefault);
}

// The URL's query with the reader's state in it: what differs from the page as built.
function stateQuery() {
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
  return q;
}

function writeURL() {
  var search = stateQuery().toString();
  var url = location.pathname + (search ? "?" + search : "") + location.hash;
  if (url !== location.pathname + location.search + location.hash) history.replaceState(history.state, "", url);
}

function writeURLSoon() {
  // history.replaceState costs a few milliseconds in Chromium: write once the reader pauses.
  afterPause("url", PAUSE_MS, writeURL);
}

function showControls() {
  Object.keys(state.sliders).forEach(function (name) {
    inputs(name).forEach(function (input) {
      input.value = state.sliders[name];
      var out = input.parentNode.querySelector("output");
      if (out) setText(out, shownValue(name, input.value));
    });
  });
}

// A new page: its inputs are other elements.
function resetControls() {
  inputCache = {};
}
