/* explainer-gen's loader: each computed number's card. A number in the prose links to its entry in
 * "How the numbers are computed" (render/how.py), which works without JavaScript and in print.
 * With it, the pointer resting on the number, keyboard focus or a tap opens a card beside the
 * number with that entry's derivation, as citation and glossary cards do (explainer.css: the
 * card's look and place are theirs). A tap on a number whose card is open follows the link.
 *
 * One card serves the page. It is filled from the entry when it opens, so the page carries each
 * derivation once, and it is described to a screen reader as the number's description while open.
 * The entries hold the page's starting settings; a card whose number the reader has moved away
 * from them says so, with the value now shown, above the derivation at those settings. */

var HOW_CLOSE_MS = 200; // how long the pointer may take to cross from a number to its card
var howCard = null; // {el, link} while a page is shown; link: the number whose card is open
var howTouch = false; // the last pointer to go down was a finger
var howMuted = null; // the link whose card Escape closed: it stays closed until the reader moves on
var howOpenAtTap = null; // the link whose card was open as the last pointer went down

function howLink(target) {
  return target && target.closest ? target.closest("a" + dot(CLS.how)) : null;
}

// The entry the link leads to, and the one its derivation is written out in (an entry whose
// derivation came earlier on the page links to that one: render/how.py).
// (Material's instant navigation writes links out in full: `hash` is where they lead on the page.)
function howEntry(link) {
  var entry = byHash(link);
  if (!entry) return null;
  var same = entry.querySelector(":scope > " + dot(CLS.how_same) + " a");
  return { entry: entry, full: (same && byHash(same)) || entry };
}

function byHash(a) { return a.hash ? document.getElementById(decodeURIComponent(a.hash.slice(1))) : null; }

// Whether the number shows the page's starting settings: those its texts depend on are where the
// page was built (before the page's state is known, unless a shared link's is on its way).
function howAtBuilt(link) {
  var span = link.querySelector(having(ATTR.num));
  if (!span) return true; // a number that never moves
  if (!state || !page) return !location.search;
  var n = page.numbers[span.getAttribute(ATTR.num)];
  return !n || n.deps.every(function (dep) {
    return dep === FACTS.scenario ? state.scenario === page.default : state.sliders[dep] === page.sliders[dep].default;
  });
}

// The card's text: the entry's head (the number as built, its quantity, its kind), a note if the
// number has moved since, then the derivation. Copies keep no ids and no links (a card is read,
// not used: the number itself leads to the entry).
function fillHowCard(el, link, found) {
  var body = document.createDocumentFragment();
  var head = found.entry.firstElementChild.cloneNode(true);
  body.appendChild(head);
  if (!howAtBuilt(link)) {
    var note = document.createElement("p");
    note.className = CLS.how_moved;
    var now = document.createElement("strong");
    now.textContent = link.textContent;
    note.append("With the settings now on the page it is ", now,
                "; below is how it is made at the page's starting settings.");
    body.appendChild(note);
  }
  Array.prototype.forEach.call(found.full.children, function (child, i) {
    if (found.full === found.entry && i === 0) return; // the head, above
    if (child.classList.contains(CLS.how_same)) return;
    body.appendChild(child.cloneNode(true));
  });
  // Each part by its head alone ("step(1) time of one decode pass: 12.0 ms"): its own derivation
  // is in the entry, which the number links to.
  Array.prototype.forEach.call(body.querySelectorAll(dot(CLS.how_parts) + " > li"), function (li) {
    li.replaceChildren(li.firstElementChild);
  });
  Array.prototype.forEach.call(body.querySelectorAll("[id]"), function (x) { x.removeAttribute("id"); });
  Array.prototype.forEach.call(body.querySelectorAll("a"), function (a) {
    var span = document.createElement("span");
    span.append.apply(span, Array.prototype.slice.call(a.childNodes));
    a.replaceWith(span);
  });
  el.replaceChildren(body);
}

function openHowCard(link) {
  if (!howCard || howMuted === link) return;
  cancel("how card");
  if (howCard.link === link) return;
  var found = howEntry(link);
  if (!found) return;
  closeHowCard();
  // Right after its number, so that Tab leads from the number into a card long enough to scroll.
  link.after(howCard.el);
  fillHowCard(howCard.el, link, found);
  link.classList.add(CLS.how_open);
  link.setAttribute("aria-describedby", howCard.el.id);
  howCard.el.hidden = false;
  howCard.link = link;
  // A card taller than its room scrolls, and is then reached by Tab to scroll it by keyboard.
  if (howCard.el.scrollHeight > howCard.el.clientHeight + 1) howCard.el.tabIndex = 0;
  else howCard.el.removeAttribute("tabindex");
  // Docked at the bottom of a narrow window, the card must not cover its number: a tap on the
  // number again follows its link.
  var card = howCard.el.getBoundingClientRect(), at = link.getBoundingClientRect();
  if (card.top < at.bottom && card.bottom > at.top && card.top > at.height) {
    window.scrollBy(0, at.bottom - card.top + 8);
  }
}

// The numbers moved (numbers.js): an open card says how its number now stands.
function refreshHowCard() {
  if (!howCard || !howCard.link) return;
  var found = howEntry(howCard.link);
  if (found) fillHowCard(howCard.el, howCard.link, found);
}

function closeHowCard() {
  cancel("how card");
  if (!howCard || !howCard.link) return;
  howCard.link.classList.remove(CLS.how_open);
  howCard.link.removeAttribute("aria-describedby");
  howCard.el.hidden = true;
  howCard.link = null;
}

function closeHowCardSoon() { afterPause("how card", HOW_CLOSE_MS, closeHowCard); }

// A new page: its own card, kept at the end of the article the numbers are in until it opens. The
// listeners, on the document, are set once per tab (howListen) and find the card through `howCard`.
function resetHowCard() {
  closeHowCard();
  if (howCard) howCard.el.remove();
  howMuted = null;
  howCard = null;
  var first = document.querySelector("a" + dot(CLS.how));
  if (!first) return;
  var el = document.createElement("div");
  el.className = CLS.card + " " + CLS.how_card;
  el.id = CLS.how_card;
  el.setAttribute("role", "tooltip");
  el.hidden = true;
  (first.closest("article") || document.body).appendChild(el);
  howCard = { el: el, link: null };
}

function howListen() {
  document.addEventListener("pointerdown", function (e) {
    howTouch = e.pointerType === "touch";
    howOpenAtTap = howCard && howCard.link;
    if (howCard && howCard.link && !howLink(e.target) && !howCard.el.contains(e.target)) closeHowCard();
  }, true);
  document.addEventListener("pointerover", function (e) {
    if (!howCard || e.pointerType === "touch") return;
    var link = howLink(e.target);
    if (link) openHowCard(link);
    else if (howCard.el.contains(e.target)) cancel("how card");
  });
  document.addEventListener("pointerout", function (e) {
    if (!howCard || e.pointerType === "touch" || !howCard.link) return;
    var from = howLink(e.target) || (howCard.el.contains(e.target) ? howCard.el : null);
    var to = e.relatedTarget;
    if (!from || (to && (from.contains(to) || howCard.el.contains(to) || howLink(to) === howCard.link))) return;
    if (howMuted && howLink(e.target) === howMuted) howMuted = null;
    if (howCard.link !== document.activeElement) closeHowCardSoon();
  });
  document.addEventListener("focusin", function (e) {
    var link = howLink(e.target);
    if (link) openHowCard(link);
    else if (howCard && howCard.link && !howCard.el.contains(e.target)) closeHowCard();
  });
  // Focus leaving a number or its card for anywhere but the other closes the card (unless the
  // pointer rests on the number).
  document.addEventListener("focusout", function (e) {
    var link = howLink(e.target), to = e.relatedTarget;
    if (link && howMuted === link) howMuted = null;
    if (!howCard || !howCard.link) return;
    if (link !== howCard.link && !howCard.el.contains(e.target)) return;
    if (to && (to === howCard.link || howCard.el.contains(to))) return;
    if (!howCard.link.matches(":hover") && !howCard.el.matches(":hover")) closeHowCard();
  });
  // A first tap opens the card; a tap on a number whose card is open follows its link.
  document.addEventListener("click", function (e) {
    var link = howLink(e.target);
    if (!link || !howTouch || !howCard) return;
    if (howOpenAtTap === link) { closeHowCard(); return; }
    e.preventDefault();
    howMuted = null;
    openHowCard(link);
  });
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape" || !howCard || !howCard.link) return;
    var link = howMuted = howCard.link, inside = howCard.el.contains(document.activeElement);
    closeHowCard();
    if (inside) link.focus(); // back to the number, its card closed
  });
}
