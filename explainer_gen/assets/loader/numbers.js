/* explainer-gen's loader: the numbers in the prose. Each number that moves has its texts for
 * every position in the page state; this shows the one at the reader's position. */

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
var nearNumbers = null; // the number spans' nearWatcher (base.js)
var farStale = false; // some span away from the screen shows an earlier position

function watchNumbers() {
  if (nearNumbers) nearNumbers.disconnect();
  farStale = false;
  nearNumbers = nearWatcher("50% 0px", function (span) {
    if (!farStale || !state) return;
    renderNumber(span, currentScenario());
    refreshHowCard(); // how.js
  });
  Array.prototype.forEach.call(document.querySelectorAll(having(ATTR.num)), nearNumbers.observe);
}

function currentScenario() {
  return { size: page.scenarios.length, pos: Math.max(0, scenarioIndex(state.scenario)) };
}

function renderNumber(span, scenario) {
  var n = page.numbers[span.getAttribute(ATTR.num)];
  if (!n) return;
  var text = n.texts[flatIndex(n.deps, scenario)];
  if (text !== undefined && span.textContent !== text) {
    setText(span, text);
    changed.add(span);
  }
}

// Every number on the page, or (nearOnly) those on or near the screen.
function renderNumbers(nearOnly) {
  var spans = document.querySelectorAll(having(ATTR.num)), scenario = currentScenario();
  var skipped = false;
  for (var i = 0; i < spans.length; i++) {
    if (nearOnly && nearNumbers && !nearNumbers.isNear(spans[i])) { skipped = true; continue; }
    renderNumber(spans[i], scenario);
  }
  farStale = skipped;
  if (!nearOnly) cancel("numbers");
  refreshHowCard(); // how.js: an open card follows its number
}

function renderNumbersSoon() {
  renderNumbers(true);
  if (farStale) afterPause("numbers", PAUSE_MS, function () { renderNumbers(false); });
}

// A new page: other spans, none watched yet.
function resetNumbers() {
  if (nearNumbers) { nearNumbers.disconnect(); nearNumbers = null; }
  farStale = false;
}
