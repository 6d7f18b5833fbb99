// explainer-gen: the theme's start-up, done before the page's body exists.
//
// Inlined at the end of each page's <head> (render/chrome.py). The theme's bundle, which runs
// once the body is parsed, makes the same three changes. Made there, each one restyles every
// element of a long page (on the speculative-decoding page, each cost 30 to 110 ms on a phone-speed
// CPU). Made here, while the document is a few dozen elements, they cost nothing, and when the bundle
// makes them again nothing changes, so nothing is restyled.
(function () {
  var root = document.documentElement;
  // The bundle swaps no-js for js. Its focus-visible polyfill then marks <html>. Should the
  // bundle fail to load, its <script> puts no-js back (chrome.py), and the theme's no-JavaScript
  // layout returns.
  root.classList.remove("no-js");
  root.classList.add("js", "js-focus-visible");
  root.setAttribute("data-js-focus-visible", "");
  // Instant navigation writes each relative URL back in resolved form (`el.href = el.href`).
  // For a stylesheet, that makes the browser process the sheet again and restyle the whole page.
  var links = document.head.querySelectorAll("link[href]");
  for (var i = 0; i < links.length; i++) {
    var href = links[i].getAttribute("href");
    if (href && !/^(?:[a-z]+:)?\/\//i.test(href)) links[i].href = links[i].href;
  }
  // The bundle is deferred (chrome.py): it starts once the page is parsed. At DOMContentLoaded,
  // its document$ emits the page, and the page's components mount on it (the content, the header,
  // the sidebars, the table of contents; the search and the dialogs mount as the bundle starts).
  // In Chromium that dispatch runs in the bundle's own task: start-up and mounting made one task
  // of 380 to 500 ms at 4x CPU, the page's longest. Here the first page document$ emits goes out
  // in a task of its own (a message: a timer may wait for the load event in some browsers), so the
  // browser can answer a reader, or draw, in between; later pages (instant navigation) go through
  // as they come. Added from <head>, this listener runs before the bundle's own.
  document.addEventListener("DOMContentLoaded", function () {
    var subject = window.document$;
    if (!subject || typeof subject.next !== "function") return;
    var own = Object.prototype.hasOwnProperty.call(subject, "next"), next = subject.next;
    subject.next = function (value) {
      if (own) subject.next = next; else delete subject.next;
      var channel = new MessageChannel();
      channel.port1.onmessage = function () { next.call(subject, value); };
      channel.port2.postMessage(null);
    };
  }, { once: true, capture: true });
})();
