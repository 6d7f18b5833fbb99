/* explainer-gen's loader: what a screen reader hears. */

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

// A new page: nothing waits to be described or announced.
function resetDescriptions() {
  undescribed.clear();
  changed.clear();
  moved = null;
}
