// explainer-gen: the light/dark switch, in place of the theme's palette component.
//
// Inlined right after the header's palette form (render/chrome.py), so it runs while the page
// is still being read, before its content exists. It does what the theme's component does: it
// applies the stored or the system's palette, shows the toggle for the next one, sets the
// color-scheme and theme-color meta tags, follows the reader's switch, and stores the choice
// where the theme's own inline script reads it (`__palette`). The theme's component runs at the end of the
// body and restyles the whole page three times as it starts: it inserts a color-scheme meta tag
// and then fills it in, each a change of the platform colours, and it sets and clears a
// transition guard on <body>. Here, the first two happen before the content exists, and the
// guard is set only when the reader switches. The form loses its
// data-md-component="palette", so the theme's bundle leaves it alone.
(function () {
  var form = document.querySelector("form[data-eg-palette]");
  if (!form) return;
  var inputs = Array.prototype.slice.call(form.querySelectorAll("input"));
  if (!inputs.length) return;
  var body = document.body;
  var KEYS = ["media", "scheme", "primary", "accent"];
  // The theme's storage helpers throw where storage is blocked: then nothing is kept.
  function get(key) {
    try { return typeof __md_get === "function" ? __md_get(key) : null; } catch (e) { return null; }
  }
  function set(key, value) {
    try { if (typeof __md_set === "function") __md_set(key, value); } catch (e) { /* not kept */ }
  }
  var schemeMeta = document.createElement("meta");
  var themeMeta = document.createElement("meta");
  schemeMeta.name = "color-scheme";
  themeMeta.name = "theme-color";
  var current = -1;
  var chosen = false; // the reader switched on this page (kept even where storage is blocked)

  // As the theme does: a palette without a media query (an empty one) matches any system.
  function matches(input) {
    return matchMedia(input.getAttribute("data-md-color-media") || "").matches;
  }

  // A palette's colours; one that follows the system ("(prefers-color-scheme)") takes the
  // colours of the light or the dark palette, whichever the system prefers.
  function colours(input) {
    var own = input;
    if (input.getAttribute("data-md-color-media") === "(prefers-color-scheme)") {
      var which = matchMedia("(prefers-color-scheme: light)").matches ? "light" : "dark";
      own = form.querySelector("[data-md-color-media='(prefers-color-scheme: " + which + ")']") || input;
    }
    var out = {};
    KEYS.forEach(function (key) {
      out[key] = (key === "media" ? input : own).getAttribute("data-md-color-" + key);
    });
    return out;
  }

  // Attributes are written only when they change: an unchanged page restyles nothing.
  function apply(index) {
    var colour = colours(inputs[index]);
    KEYS.forEach(function (key) {
      var name = "data-md-color-" + key;
      if (colour[key] === null) body.removeAttribute(name);
      else if (body.getAttribute(name) !== colour[key]) body.setAttribute(name, colour[key]);
    });
    inputs.forEach(function (input, i) {
      input.checked = i === index;
      var label = input.nextElementSibling;
      if (label && label.tagName === "LABEL" && label.hidden !== (i !== index)) label.hidden = i !== index;
    });
    var style = getComputedStyle(document.querySelector("[data-md-component=header]") || body);
    if (schemeMeta.content !== style.colorScheme) schemeMeta.content = style.colorScheme;
    var rgb = (style.backgroundColor.match(/\d+/g) || []).slice(0, 3);
    var hex = "#" + rgb.map(function (v) { return (+v).toString(16).padStart(2, "0"); }).join("");
    if (rgb.length === 3 && themeMeta.content !== hex) themeMeta.content = hex;
    current = index;
    return colour;
  }

  function stored() {
    var palette = get("__palette");
    return palette && typeof palette.index === "number" ? palette : null;
  }

  function initial() {
    var palette = stored();
    var index = palette ? palette.index : inputs.findIndex(matches);
    return Math.max(0, Math.min(index, inputs.length - 1));
  }

  apply(initial());
  document.head.appendChild(schemeMeta);
  document.head.appendChild(themeMeta);

  // A change after the start: colours change at once, without the theme's transitions; `keep`
  // stores the palette (a reader's choice, or an automatic palette's new colours).
  function change(index, keep) {
    body.setAttribute("data-md-color-switching", "");
    try {
      var colour = apply(index);
      if (keep) set("__palette", { index: index, color: colour });
    } finally {
      setTimeout(function () { body.removeAttribute("data-md-color-switching"); });
    }
  }
  form.addEventListener("change", function (event) {
    var index = inputs.indexOf(event.target);
    if (index < 0) return;
    chosen = true;
    change(index, true);
  });
  // Enter on the focused switch moves to the next palette, as the theme's component does.
  form.addEventListener("keydown", function (event) {
    if (event.key !== "Enter") return;
    event.preventDefault();
    var next = inputs[(current + 1) % inputs.length];
    next.click();
    next.focus();
  });
  // When the system's light or dark setting changes: a page whose reader has not chosen follows
  // it, and an automatic palette ("(prefers-color-scheme)") takes its new colours.
  var system = matchMedia("(prefers-color-scheme: dark)");
  var onSystem = function () {
    if (!chosen && !stored()) change(initial(), false);
    else if (inputs[current].getAttribute("data-md-color-media") === "(prefers-color-scheme)") change(current, true);
  };
  if (system.addEventListener) system.addEventListener("change", onSystem);
  else if (system.addListener) system.addListener(onSystem);
})();
