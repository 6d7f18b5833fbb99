/* explainer-gen's loader: each computed number's card. A number in the prose links to its entry in
 * "How the numbers are computed" (render/how.py), which works without JavaScript and in print.
 * With it, the pointer resting on the number, keyboard focus or a tap opens a card beside the
 * number with that entry's derivation, as citation and glossary cards do (explainer.css: the
 * card's look and place are theirs). A tap on a number whose card is open follows the link.
 *
 * One card serves the page. It is filled from the entry as it opens, so the page carries each
 * derivation once, and it is in the document only while open, right after its number, so that Tab
 * leads from the number into a card long enough to scroll. A screen reader hears the card's head
 * (and whether the number has moved) as the number's description; the whole derivation is the
 * card's, and the entry's, to read. The entries hold the page's starting settings; a card whose
 * number the reader has moved away from them says so, with the value now shown, above the
 * derivation at those settings. */

var HOW_CLOSE_MS = 200; // how long the pointer may take to cross from a number to its card
var howCard = null; // {el, link, byHover, docked, shows} while a page is shown; link: the number whose card is open
var howMuted = null; // the number whose card Escape closed or whose link was followed: shut until the reader moves on
var howOpenAtTap = null; // the number whose card was open as the last finger went down

function howLink(target) {
  return target && target.closest ? target.closest("a" + dot(CLS.how)) : null;
}

function byHash(a) { return a.hash ? document.getElementById(decodeURIComponent(a.hash.slice(1))) : null; }

// The entry the link leads to, and the one its derivation is written out in (an entry whose
// derivation came earlier on the page links to that one: render/how.py). Material's instant
// navigation writes links out in full: `hash` is where they lead on the page.
function howEntry(link) {
  var entry = byHash(link);
  if (!entry) return null;
  var same = entry.querySelector(":scope > " + dot(CLS.how_same) + " a");
  return { entry: entry, full: (same && byHash(same)) || entry };
}

// Whether the number shows the page's starting settings: those its texts depend on are where the
// page was built (controls.js: atDefault, and addressMovesControls before the state is known).
function howAtBuilt(link) {
  var span = link.querySelector(having(ATTR.num));
  if (!span) return true; // a number that never moves
  if (!state || !page) return !addressMovesControls();
  var n = page.numbers[span.getAttribute(ATTR.num)];
  return !n || n.deps.every(atDefault);
}

// The card's text: the entry's head (the number as built, its quantity, its kind), a note if the
// number has moved since, then the derivation, each of its parts by its head alone (its own
// derivation is in the entry). Copies keep no ids and no links (a card is read, not used: the
// number itself leads to the entry).
function fillHowCard(link, found) {
  var el = howCard.el, body = document.createDocumentFragment();
  var head = found.entry.firstElementChild.cloneNode(true);
  head.id = CLS.how_card + "-head";
  body.appendChild(head);
  var described = head.id;
  if (!howAtBuilt(link)) {
    var note = document.createElement("p");
    note.className = CLS.how_moved;
    note.id = CLS.how_card + "-moved";
    var now = document.createElement("strong");
    now.textContent = link.textContent;
    note.append("With the settings now on the page it is ", now,
                "; below is how it is made at the page's starting settings.");
    body.appendChild(note);
    described += " " + note.id;
  }
  Array.prototype.forEach.call(found.full.children, function (child, i) {
    if (found.full === found.entry && i === 0) return; // the head, above
    if (child.classList.contains(CLS.how_same)) return;
    var copy = child.cloneNode(true);
    Array.prototype.forEach.call(copy.querySelectorAll("[id]"), function (x) { x.removeAttribute("id"); });
    if (copy.classList.contains(CLS.how_parts)) {
      Array.prototype.forEach.call(copy.children, function (li) { li.replaceChildren(li.firstElementChild); });
    }
    body.appendChild(copy);
  });
  Array.prototype.forEach.call(body.querySelectorAll("a"), function (a) {
    var span = document.createElement("span");
    span.append.apply(span, Array.prototype.slice.call(a.childNodes));
    a.replaceWith(span);
  });
  el.replaceChildren(body);
  link.setAttribute("aria-describedby", described);
  howCard.shows = howShows(link);
}

function howShows(link) { return (howAtBuilt(link) ? "built " : "moved ") + link.textContent; }

// Once filled: a card taller than its room scrolls, and is then reached by Tab; docked at the
// bottom of a narrow window, it must not cover the number it was opened from by focus or a tap
// (a tap on the number again follows its link). A card opened by the pointer never scrolls the
// page from under it.
function placeHowCard() {
  var el = howCard.el;
  if (el.scrollHeight > el.clientHeight + 1) el.tabIndex = 0;
  else el.removeAttribute("tabindex");
  var card = el.getBoundingClientRect(), at = howCard.link.getBoundingClientRect();
  // Beside its number, the card touches it above or below; docked, it is away from it.
  howCard.docked = Math.abs(card.top - at.bottom) > 2 && Math.abs(card.bottom - at.top) > 2;
  if (howCard.byHover) return;
  if (card.top < at.bottom && card.bottom > at.top && card.top > at.height) window.scrollBy(0, at.bottom - card.top + 8);
}

function openHowCard(link, byHover) {
  if (!howCard || howMuted === link) return;
  cancel("how card");
  if (howCard.link === link) { if (!byHover) howCard.byHover = false; return; }
  var found = howEntry(link);
  if (!found) return;
  closeHowCard();
  howCard.link = link;
  howCard.byHover = !!byHover;
  link.after(howCard.el);
  fillHowCard(link, found);
  link.classList.add(CLS.how_open);
  placeHowCard();
}

// The numbers moved (numbers.js): an open card says how its number now stands. It is filled again
// only when that changed (what the number shows, or whether it is at the starting settings).
function refreshHowCard() {
  if (!howCard || !howCard.link) return;
  if (howCard.shows === howShows(howCard.link)) return;
  var found = howEntry(howCard.link), top = howCard.el.scrollTop;
  if (!found) return;
  fillHowCard(howCard.link, found);
  howCard.el.scrollTop = top;
  placeHowCard();
}

function closeHowCard() {
  cancel("how card");
  if (!howCard || !howCard.link) return;
  var link = howCard.link;
  link.classList.remove(CLS.how_open);
  link.removeAttribute("aria-describedby");
  if (howCard.el.contains(document.activeElement)) link.focus();
  howCard.el.remove();
  howCard.link = null;
}

// The pointer left a number or its card: the card closes after a moment, unless the pointer has
// reached it (or the number) by then, or the card was opened by focus that is still there. A
// focused number whose card the hover took over gets its own back.
function closeHowCardSoon() {
  afterPause("how card", HOW_CLOSE_MS, function () {
    if (!howCard || !howCard.link) return;
    if (howCard.link.matches(":hover") || howCard.el.matches(":hover")) return;
    closeHowCard();
    var focused = howLink(document.activeElement);
    if (focused) openHowCard(focused, false);
  });
}

// A new page: its own card, out of the document until it opens. The listeners, on the document,
// are set once per tab (howListen) and find the card through `howCard`.
function resetHowCard() {
  closeHowCard();
  howMuted = null;
  howCard = null;
  if (!document.querySelector("a" + dot(CLS.how))) return;
  var el = document.createElement("div");
  el.className = CLS.card + " " + CLS.how_card;
  el.id = CLS.how_card;
  el.setAttribute("role", "tooltip");
  howCard = { el: el, link: null, byHover: false, docked: false, shows: null };
}

function howListen() {
  document.addEventListener("pointerdown", function (e) {
    if (e.pointerType === "touch") howOpenAtTap = howCard && howCard.link;
    if (howCard && howCard.link && !howLink(e.target) && !howCard.el.contains(e.target)) closeHowCard();
  }, true);
  document.addEventListener("pointerover", function (e) {
    if (!howCard || e.pointerType === "touch") return;
    var link = howLink(e.target);
    if (link) openHowCard(link, true);
    else if (howCard.el.contains(e.target)) cancel("how card");
  });
  document.addEventListener("pointerout", function (e) {
    if (!howCard || e.pointerType === "touch") return;
    var from = howLink(e.target), to = e.relatedTarget;
    if (from && howMuted === from && !(to && from.contains(to))) howMuted = null; // moved on from it
    // A card opened by focus stays while focus does; a docked one, which the pointer may take a
    // while to reach, until a press elsewhere, Escape or focus moving on.
    if (!howCard.link || !howCard.byHover || howCard.docked) return;
    if (!from && !howCard.el.contains(e.target)) return;
    if (to && (howLink(to) === howCard.link || howCard.el.contains(to))) return;
    closeHowCardSoon();
  });
  document.addEventListener("focusin", function (e) {
    var link = howLink(e.target);
    if (link) openHowCard(link, false);
    else if (howCard && howCard.link && !howCard.el.contains(e.target)) closeHowCard();
  });
  // Focus leaving a number or its card for anywhere but the other closes the card (unless the
  // pointer rests on either).
  document.addEventListener("focusout", function (e) {
    var link = howLink(e.target), to = e.relatedTarget;
    if (link && howMuted === link) howMuted = null;
    if (!howCard || !howCard.link) return;
    if (link !== howCard.link && !howCard.el.contains(e.target)) return;
    if (to && (to === howCard.link || howCard.el.contains(to))) return;
    if (!howCard.link.matches(":hover") && !howCard.el.matches(":hover")) closeHowCard();
  });
  // A first tap opens the card; a tap on a number whose card is open, a click or Enter follows
  // its link, and the card closes. Listened for before the theme's instant navigation, which
  // handles the page's links on <body>.
  document.addEventListener("click", function (e) {
    var link = howLink(e.target);
    if (!link || !howCard) return;
    if (e.pointerType === "touch" && howOpenAtTap !== link) {
      e.preventDefault();
      e.stopPropagation();
      howMuted = null;
      openHowCard(link, false);
      return;
    }
    closeHowCard();
    howMuted = link; // focus stays on the number that was followed: its card stays shut
  }, true);
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape" || !howCard || !howCard.link) return;
    howMuted = howCard.link;
    closeHowCard();
  });
}
