/* explainer-gen's loader: each computed number's card. A number in the prose links to its entry in
 * "How the numbers are computed" (render/how.py), which works without JavaScript and in print and
 * holds the page's starting settings. With it, the pointer resting on the number, keyboard focus
 * or a tap opens a card beside the number with its derivation at the state the reader has set, as
 * citation and glossary cards do (explainer.css: the card's look and place are theirs). A tap on a
 * number whose card is open follows the link.
 *
 * Each number's card file (client/contract.number_card), fetched as its card first opens, holds
 * what the card shows at every state of the page: the card's HTML as a few templates (render/how.card:
 * the derivation's head and body, each of its parts by its head), and the texts that change in
 * them, laid out over the sliders and the switch as the numbers' own texts are (numbers.js). A
 * slider moved while the card is open changes the values in it. One card element serves the
 * page; it is in the document only while open, right after its number, so that Tab leads from
 * the number into a card long enough to scroll. A screen reader hears the card's head as the
 * number's description; the whole derivation is the card's, and the entry's, to read. */

var HOW_CLOSE_MS = 200; // how long the pointer may take to cross from a number to its card
var howCard = null; // {el, link, byHover, docked, card, html} while a page is shown; link: the number whose card is open
var howMuted = null; // the number whose card Escape closed or whose link was followed: shut until the reader moves on
var howOpenAtTap = null; // the number whose card was open as the last finger went down
var HOW_HOLE = new RegExp(FACTS.holes.open + "(\\d+)" + FACTS.holes.close, "g");

function howLink(target) {
  return target && target.closest ? target.closest("a" + dot(CLS.how)) : null;
}

// The number's card file, once the page's state (which names it, by the entry the number's link
// leads to) is known; null where there is none. Material's instant navigation writes links out in
// full: `hash` is where they lead on the page.
function howCardFile(link) {
  return withState().then(function () {
    var name = page && page.cards && page.cards[decodeURIComponent(link.hash.slice(1))];
    if (!name) return null;
    return fetchJSON(new URL(name, pageUrl).href).then(function (card) { return checked("card file", card); });
  });
}

function howText(text) {
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

// The card's HTML at the reader's state: the template its file names there, with each hole's text
// there put in (each laid out as a number's texts are: numbers.js, flatIndex).
function howHtml(card) {
  var scenario = currentScenario();
  function at(laid) { return laid.texts[flatIndex(laid.deps, scenario)]; }
  return card.templates[at(card.which)].replace(HOW_HOLE, function (_, n) { return howText(at(card.holes[+n])); });
}

// The card at the reader's state, headed by the number as the prose shows it (as its entry is, at
// the starting settings); its head is the number's description.
function fillHowCard(link) {
  var html = howHtml(howCard.card);
  howCard.html = html + "\n" + link.textContent;
  howCard.el.innerHTML = html;
  var head = howCard.el.firstElementChild, strong = head && head.querySelector("strong");
  if (strong) strong.textContent = link.textContent;
  if (head) head.id = CLS.how_card + "-head";
  link.setAttribute("aria-describedby", CLS.how_card + "-head");
}

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

// The block of the article that holds the open card is marked while it does: the page paints
// each of its other blocks on its own (explainer.css), which would hold the card, position: fixed,
// inside the block's box.
function howHost(link, on) {
  var block = link.closest("article > *");
  if (block) block.classList.toggle(CLS.how_host, on);
}

function openHowCard(link, byHover) {
  if (!howCard || howMuted === link) return;
  cancel("how card");
  if (howCard.link === link) { if (!byHover) howCard.byHover = false; return; }
  closeHowCard();
  howCard.link = link;
  howCard.byHover = !!byHover;
  link.classList.add(CLS.how_open);
  var gen = generation;
  function gone() { return gen !== generation || !howCard || howCard.link !== link; } // closed, or moved on, meanwhile
  howCardFile(link).then(function (card) {
    if (gone()) return;
    if (!card) { closeHowCard(); return; } // none to show: the link still leads to the entry
    howCard.card = card;
    howHost(link, true);
    link.after(howCard.el);
    fillHowCard(link);
    placeHowCard();
  }).catch(function (err) {
    if (!gone()) closeHowCard();
    report(err);
  });
}

// The numbers moved (numbers.js): an open card shows the derivation at the reader's new state. It
// is filled again only when its text or its number (which heads it, as the prose shows it) changed.
function refreshHowCard() {
  if (!howCard || !howCard.link || !howCard.card || !howCard.el.isConnected) return;
  if (howCard.html === howHtml(howCard.card) + "\n" + howCard.link.textContent) return;
  var top = howCard.el.scrollTop;
  fillHowCard(howCard.link);
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
  howHost(link, false);
  howCard.link = null;
  howCard.card = null;
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
  howCard = { el: el, link: null, byHover: false, docked: false, card: null, html: null };
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
