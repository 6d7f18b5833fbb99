/* explainer-gen's loader: a figure leaving the page. Each figure gets three buttons: "Download
 * SVG" and "Download PNG" save what the figure shows (its live view at the reader's state, or its
 * static picture before it goes live), in the page's scheme and on its background, named
 * <page>-<figure id>; "Copy link" copies the page's URL with the reader's state and the figure's
 * anchor. A saved SVG stands alone: the chart font's files are inlined in it, and a static
 * picture's palette classes get the scheme's colours. A PNG has twice the figure's CSS pixels.
 * A printed page shows each figure at the reader's state: before printing, a live figure whose
 * state is not the one its static picture was built at gets a static picture of its live view
 * (the picture is what print shows, in the light palette). Without JavaScript there are no
 * buttons: the figure's data table links its files (render/blocks.py, figure_html). */

var EXPORT_SCALE = 2; // a PNG's pixels per CSS pixel of the figure
var NOTE_MS = 4000; // how long the note under the buttons ("Link copied") stays
var SVG_NS = "http://www.w3.org/2000/svg";
// The folder of FACTS.font.files: the loader's own (read while it first runs), else the bundle's.
var loaderUrl = document.currentScript ? document.currentScript.src : "";
var fontRules = null; // the chart font as @font-face rules, its files inlined: fetched once per tab
var exporting = new Set(); // the buttons at work (a second click meanwhile does nothing)
// Attributes of a live view's SVG that mean nothing inside a static picture (one named image).
var UNSPOKEN = ["role", "aria-roledescription", "aria-label", "aria-hidden", "pointer-events"];

var EXPORTS = [["Download SVG", downloadSVG], ["Download PNG", downloadPNG], ["Copy link", copyLink]];

function addExports(fig) {
  var old = fig.el.querySelector(dot(CLS.exports));
  if (old) old.remove(); // the same page set up again
  var bar = document.createElement("div");
  bar.className = CLS.exports;
  bar.setAttribute("role", "group");
  bar.setAttribute("aria-label", "Save or share this figure");
  EXPORTS.forEach(function (e) {
    var button = document.createElement("button");
    button.type = "button";
    button.textContent = e[0];
    button.addEventListener("click", function () {
      if (exporting.has(button)) return;
      exporting.add(button);
      var gen = generation;
      e[1](fig, button, gen).catch(function (err) {
        if (gen !== generation) return;
        note(fig, e[0] === "Copy link" ? "Could not copy the link" : "Could not make the file");
        report(err);
      }).then(function () { exporting.delete(button); });
    });
    bar.appendChild(button);
  });
  var said = document.createElement("span");
  said.className = CLS.exports_note;
  said.setAttribute("role", "status");
  bar.appendChild(said);
  var after = fig.el.querySelector(dot(CLS.controls)) || fig.el.querySelector(dot(CLS.desc));
  if (after && after.parentNode === fig.el) after.after(bar); else fig.el.appendChild(bar);
}

function note(fig, text) {
  var el = fig.el.querySelector(dot(CLS.exports_note));
  if (!el) return;
  // The same words again would not be read out: vary them invisibly.
  el.textContent = el.textContent === text ? text + "\u00a0" : text;
  afterPause("note " + fig.el.id, NOTE_MS, function () { el.textContent = ""; });
}

// The file's name: the page's slug (the last part of its path), a dash, the figure's anchor.
function fileName(fig, ext) {
  var path = decodeURIComponent(location.pathname).replace(/\/index\.html?$/, "").replace(/\/+$/, "");
  var slug = path.slice(path.lastIndexOf("/") + 1).replace(/\.html?$/, "") || "figure";
  return slug + "-" + fig.el.id + "." + ext;
}

// Whether the figure's static picture shows the reader's state: the page's default scenario,
// and each of the figure's sliders where the figure was built.
function atBuilt(fig) {
  if (!state) return !addressMovesControls(); // controls.js: a shared link's state is on its way
  return atDefault(FACTS.scenario) && fig.params.every(atDefault);
}

// Resolves with `ready()`'s first truthy answer, asked every 50 ms (for ten seconds at most).
function until(ready, gen) {
  return new Promise(function (ok, fail) {
    var tries = 0;
    (function ask() {
      if (gen !== generation) { fail(new Error("the page changed")); return; }
      var got = ready();
      if (got) ok(got);
      else if (++tries > 200) fail(new Error("the figure did not go live"));
      else setTimeout(ask, 50);
    })();
  });
}

// What the figure shows the reader: {view} once live, {still: the static <svg>} before. A
// figure whose picture does not show the reader's state (it is on its way to going live, or
// being drawn again in another scheme) is waited for.
function shown(fig, gen) {
  return until(function () {
    if (fig.result) return { view: fig.result.view };
    if (!fig.el.classList.contains(CLS.live) && atBuilt(fig)) return { still: shownStill(fig) };
    if (state && !fig.el.classList.contains(CLS.live)) schedule(fig);
    return null;
  }, gen);
}

function background() { return getComputedStyle(document.body).backgroundColor; }

// The scheme's colour of each palette class, as CSS: what a static picture's classes paint with.
function paintRules() {
  var css = getComputedStyle(document.body);
  return Object.keys(FACTS.paints).map(function (v) {
    var colour = css.getPropertyValue(v).trim(), p = FACTS.paints[v];
    return colour ? "." + p.fill + "{fill:" + colour + "}." + p.stroke + "{stroke:" + colour + "}" : "";
  }).join("");
}

function embeddedFont() {
  if (!fontRules) {
    var base = loaderUrl || bundleUrl;
    fontRules = Promise.all(Object.keys(FACTS.font.files).map(function (weight) {
      var url = new URL(FACTS.font.files[weight], base).href;
      return fetch(url).then(function (r) {
        if (!r.ok) throw new Error(url + " answered " + r.status);
        return r.blob();
      }).then(function (blob) {
        return new Promise(function (ok, fail) {
          var reader = new FileReader();
          reader.onload = function () { ok(reader.result.replace(/^data:[^;,]*/, "data:font/woff2")); };
          reader.onerror = function () { fail(reader.error); };
          reader.readAsDataURL(blob);
        });
      }).then(function (data) {
        return '@font-face{font-family:"' + FACTS.font.family + '";font-style:normal;font-weight:' + weight +
          ';src:url(' + data + ') format("woff2")}';
      });
    })).then(function (rules) { return rules.join(""); }, function (err) { fontRules = null; throw err; });
  }
  return fontRules;
}

// The static picture as a file's SVG: the page's attributes for it dropped (the ids keep the
// figure's prefix, which is harmless).
function stillText(still) {
  var svg = still.cloneNode(true);
  ["class", "role", "aria-labelledby", "focusable"].forEach(function (a) { svg.removeAttribute(a); });
  return new XMLSerializer().serializeToString(svg);
}

// An SVG that stands alone: a <style> (the font inlined, and `rules`) and the page's background
// first, then the picture.
function standalone(text, css) {
  var doc = new DOMParser().parseFromString(text, "image/svg+xml"), svg = doc.documentElement;
  var style = doc.createElementNS(SVG_NS, "style"), bg = doc.createElementNS(SVG_NS, "rect");
  style.textContent = css;
  bg.setAttribute("width", "100%");
  bg.setAttribute("height", "100%");
  bg.setAttribute("fill", background());
  svg.insertBefore(bg, svg.firstChild);
  svg.insertBefore(style, bg);
  return new XMLSerializer().serializeToString(doc);
}

function svgOf(what) {
  return Promise.all([what.view ? what.view.toSVG() : stillText(what.still), embeddedFont()]).then(function (got) {
    return standalone(got[0], got[1] + (what.view ? "" : paintRules()));
  });
}

function save(blob, name) {
  var url = URL.createObjectURL(blob), a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click(); // not in the document: the theme's instant navigation never sees it
  setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
}

function downloadSVG(fig, button, gen) {
  return shown(fig, gen).then(svgOf).then(function (text) {
    if (gen === generation) save(new Blob([text], { type: "image/svg+xml" }), fileName(fig, "svg"));
  });
}

function canvasBlob(canvas) {
  return new Promise(function (ok, fail) {
    canvas.toBlob(function (blob) { if (blob) ok(blob); else fail(new Error("the canvas made no PNG")); }, "image/png");
  });
}

// A live view's canvas at EXPORT_SCALE on the page's background; a static picture drawn to one,
// from its standalone SVG (the font inlined: an SVG image sees no font of the page's).
function pngOf(what) {
  if (what.view) {
    return what.view.toCanvas(EXPORT_SCALE).then(function (drawn) {
      var canvas = document.createElement("canvas"), ctx = canvas.getContext("2d");
      canvas.width = drawn.width;
      canvas.height = drawn.height;
      ctx.fillStyle = background();
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      ctx.drawImage(drawn, 0, 0);
      return canvasBlob(canvas);
    });
  }
  var width = +what.still.getAttribute("width"), height = +what.still.getAttribute("height");
  return svgOf(what).then(function (text) {
    var url = URL.createObjectURL(new Blob([text], { type: "image/svg+xml" })), img = new Image();
    img.src = url;
    return img.decode().then(function () {
      var canvas = document.createElement("canvas");
      canvas.width = Math.round(width * EXPORT_SCALE);
      canvas.height = Math.round(height * EXPORT_SCALE);
      canvas.getContext("2d").drawImage(img, 0, 0, canvas.width, canvas.height);
      return canvasBlob(canvas);
    }).finally(function () { URL.revokeObjectURL(url); });
  });
}

function downloadPNG(fig, button, gen) {
  return shown(fig, gen).then(pngOf).then(function (blob) {
    if (gen === generation) save(blob, fileName(fig, "png"));
  });
}

// The page's address with the reader's state in its query and the figure's anchor.
function shareURL(fig) {
  var url = new URL(location.href);
  if (state) url.search = stateQuery().toString();
  url.hash = fig.el.id;
  return url.href;
}

function copyLink(fig, button) {
  var text = shareURL(fig);
  var copied = navigator.clipboard && window.isSecureContext
    ? navigator.clipboard.writeText(text).catch(function () { return copyBySelection(text, button); })
    : copyBySelection(text, button);
  return copied.then(function () { note(fig, "Link copied"); });
}

// Where the clipboard's API is not offered (a page served over plain HTTP), the text is selected
// and copied as a reader would.
function copyBySelection(text, button) {
  var area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.setAttribute("aria-hidden", "true");
  area.style.position = "fixed";
  area.style.top = "0";
  area.style.opacity = "0";
  document.body.appendChild(area);
  area.focus({ preventScroll: true });
  area.select();
  var ok = false;
  try { ok = document.execCommand("copy"); } catch (err) { ok = false; }
  area.remove();
  button.focus({ preventScroll: true });
  return ok ? Promise.resolve() : Promise.reject(new Error("the browser did not copy the link"));
}

// -- print: each figure at the reader's state ----------------------------------------------------

var colourCanvas = null;
function sameColour(colour) { // a colour as the browser writes it (#rrggbb), or "" if it is none
  colourCanvas = colourCanvas || document.createElement("canvas").getContext("2d");
  colourCanvas.fillStyle = "rgba(1, 2, 3, 0.5)";
  colourCanvas.fillStyle = colour;
  var out = colourCanvas.fillStyle;
  return out === "rgba(1, 2, 3, 0.5)" ? "" : out;
}

// A live view's SVG as a static picture: its colours (the scheme's) become the palette's classes,
// which the page's CSS paints (in print, the light palette), and its ids get `id` as a prefix,
// as the build's pictures do (render/blocks.py, static_picture).
function pictureOf(id, text, still) {
  text = text.replace(/(\sid="|url\(#|href="#)([^"\)]+)/g, function (all, before, name) {
    return before + id + "-" + name;
  });
  var doc = new DOMParser().parseFromString(text, "image/svg+xml"), svg = doc.documentElement;
  var css = getComputedStyle(document.body), paints = {};
  Object.keys(FACTS.paints).forEach(function (v) {
    var colour = sameColour(css.getPropertyValue(v).trim());
    if (colour) paints[colour] = FACTS.paints[v];
  });
  Array.prototype.forEach.call(svg.querySelectorAll("*"), function (el) {
    ["fill", "stroke"].forEach(function (prop) {
      var value = el.getAttribute(prop), paint = value && paints[sameColour(value)];
      if (paint) { el.removeAttribute(prop); el.classList.add(paint[prop]); }
    });
    UNSPOKEN.forEach(function (a) { el.removeAttribute(a); });
  });
  var out = document.importNode(svg, true);
  Array.prototype.forEach.call(still.attributes, function (a) {
    if (["width", "height", "viewBox"].indexOf(a.name) < 0) out.setAttribute(a.name, a.value);
  });
  return out;
}

// The figure's static pictures, one in each layout's frame, in the page's order.
function stills(fig) { return Array.prototype.slice.call(fig.el.querySelectorAll(dot(CLS.static))); }

function printStates() {
  if (!state) return;
  behind.forEach(follow); // a view away from the screen still behind the reader (figures.js)
  figures.forEach(function (fig) {
    var r = fig.result, gen = generation;
    if (!r || !stills(fig).length) return;
    var at = JSON.stringify([state.scenario, fig.params.map(function (name) { return state.sliders[name]; })]);
    if (fig.printed === at) return;
    if (atBuilt(fig)) {
      if (fig.built) stills(fig).forEach(function (now, i) { showPicture(now, fig.built[i]); });
      fig.printed = at;
      return;
    }
    // Vega draws an SVG in a few promise steps and no task: done before the browser prints.
    r.view.toSVG().then(function (text) {
      if (gen !== generation || fig.result !== r) return;
      var now = stills(fig);
      if (!now.length) return;
      fig.built = fig.built || now;
      // The live view, in its layout, goes in every frame: whichever one the printed page's
      // width shows holds the reader's state. Each copy's ids get a prefix of its own.
      now.forEach(function (still, i) {
        showPicture(still, pictureOf(fig.el.id + (i ? "-" + FACTS.layout.narrowPrefix : ""), text, still));
      });
      fig.printed = at;
    }).catch(report);
  });
}

function showPicture(old, svg) {
  if (old === svg) return;
  old.replaceWith(svg);
  var frame = svg.parentNode, width = svg.getAttribute("width"), height = svg.getAttribute("height");
  if (frame && width && height) {
    frame.style.aspectRatio = width + " / " + height;
    frame.style.maxWidth = width + "px";
  }
}

// Once per tab: a print from the browser's menu, and print media as a test emulates it.
window.addEventListener("beforeprint", printStates);
var printMedia = window.matchMedia ? window.matchMedia("print") : null;
if (printMedia && printMedia.addEventListener) {
  printMedia.addEventListener("change", function (e) { if (e.matches) printStates(); });
}

// A new page: nothing of the last one's is being made.
function resetExports() {
  exporting.clear();
}
