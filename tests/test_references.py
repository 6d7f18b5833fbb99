"""Citations, the feed, the glossary and the links between pages, checked on the built site.

The built-site tests read the HTML MkDocs wrote; the error tests build scratch projects
with one mistake each and check the message names the file, the line and the nearest
valid choices, and that nothing was written.
"""
from __future__ import annotations

import json
import posixpath
import re
import shutil
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path


from helpers import REPO, SITE_ORIGINS, article, mkdocs_build

ATOM = "{http://www.w3.org/2005/Atom}"
REQUIRED_PAPERS = {"leviathan2023", "chen2023", "williams2009", "yu2022", "kwon2023", "li2024", "cai2024"}
REQUIRED_TERMS = {
    "acceptance rate", "lookahead", "draft model", "target model", "speculative decoding", "rejection sampling",
    "roofline", "arithmetic intensity", "ridge point", "memory bandwidth", "tensor core", "prefill", "decode",
    "batch", "continuous batching", "KV cache", "grouped-query attention", "paged attention", "bf16"}


class Elements(HTMLParser):
    """Every element of a page as (tag, attrs, ancestors' tags, ancestors' classes)."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, html: str):
        super().__init__()
        self.items: list[tuple[str, dict[str, str], list[str], str]] = []
        self.stack: list[tuple[str, str]] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.items.append((tag, a, [t for t, _ in self.stack], " ".join(c for _, c in self.stack)))
        if tag not in self.VOID:
            self.stack.append((tag, a.get("class", "")))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def with_class(self, cls: str):
        return [(a, anc, ancls) for t, a, anc, ancls in self.items if cls in a.get("class", "").split()]

    def ids(self) -> set[str]:
        return {a["id"] for _, a, _, _ in self.items if "id" in a}


def pages(site: Path) -> dict[str, str]:
    """Site URL path (e.g. 'explainers/speculative-decoding/') -> HTML, for every built page."""
    out = {}
    for f in site.rglob("index.html"):
        rel = f.parent.relative_to(site).as_posix()
        out["" if rel == "." else rel + "/"] = f.read_text(encoding="utf-8")
    return out


def resolve(from_url: str, href: str) -> tuple[str, str]:
    """A page-relative href -> (site URL path, fragment)."""
    path, _, frag = href.partition("#")
    if not path:
        return from_url, frag
    target = posixpath.normpath(posixpath.join(posixpath.dirname(from_url.rstrip("/") + "/x"), path))
    target = "" if target == "." else target.rstrip("/") + "/"
    return target, frag


def bib_keys() -> list[str]:
    import bibtexparser

    return [e.key for e in bibtexparser.parse_file(str(REPO / "docs" / "feed" / "papers.bib")).entries]


# ---- built site ----

def test_every_citation_resolves(site):
    keys = set(bib_keys())
    total = 0
    for url, html in pages(site).items():
        body = article(html)
        assert "[@" not in re.sub(r"<code>.*?</code>", "", body, flags=re.S), url
        doc = Elements(body)
        ids = doc.ids()
        for attrs, _, _ in doc.with_class("eg-cite-link"):
            total += 1
            key = attrs["data-eg-cite"]
            assert key in keys, (url, key)
            assert attrs["href"] == f"#ref-{key}", (url, attrs)
            assert f"ref-{key}" in ids, f"{url}: no references entry for {key}"
            card = attrs["aria-describedby"]
            assert card in ids, (url, card)
            tip = [a for t, a, _, _ in doc.items if a.get("id") == card][0]
            assert tip.get("role") == "tooltip" and "eg-card" in tip["class"]
    assert total >= 2


def test_references_list_ends_each_citing_page_and_links_to_the_feed(site):
    html = (site / "explainers" / "speculative-decoding" / "index.html").read_text()
    body = article(html)
    assert body.index('id="references"') < body.index('class="eg-references"')
    refs = re.findall(r'<li id="ref-([\w:-]+)">(.*?)</li>', body, re.S)
    cited = list(dict.fromkeys(re.findall(r'data-eg-cite="([\w:-]+)"', body)))
    assert [k for k, _ in refs] == cited and cited[:2] == ["leviathan2023", "chen2023"]
    for key, li in refs:
        assert f'href="../../feed/#{key}"' in li
        # Every reference links out: to arXiv, a DOI or, for software, its repository.
        assert re.search(r'href="https://(arxiv\.org/abs/|doi\.org/|github\.com/)', li), key


def test_cited_in_backlinks_match_the_citations(site):
    built = pages(site)
    cites: dict[str, set[str]] = {}
    for url, html in built.items():
        for attrs, _, _ in Elements(article(html)).with_class("eg-cite-link"):
            cites.setdefault(attrs["data-eg-cite"], set()).add(url)
    feed = Elements(article(built["feed/"]))
    shown: dict[str, set[str]] = {}
    current = None
    for tag, attrs, _, ancestors in feed.items:
        if "data-eg-paper" in attrs:
            current = attrs["data-eg-paper"]
            shown[current] = set()
        elif tag == "a" and "eg-cited-in" in ancestors.split():
            target, frag = resolve("feed/", attrs["href"])
            assert target in built, attrs["href"]
            assert frag == ""
            shown[current].add(target)
    assert set(shown) == set(bib_keys())
    for key in shown:
        assert shown[key] == cites.get(key, set()), key
    assert "explainers/speculative-decoding/" in cites["leviathan2023"]


def test_feed_lists_every_paper_newest_first(site):
    body = article((site / "feed" / "index.html").read_text())
    keys = re.findall(r'data-eg-paper="([\w:-]+)"', body)
    assert REQUIRED_PAPERS <= set(keys) and len(keys) == len(set(keys)) == len(bib_keys())
    months = re.findall(r'<time datetime="(\d{4}-\d{2})">', body)
    assert len(months) == len(keys) and months == sorted(months, reverse=True)
    for key in keys:
        assert re.search(rf'<h2 id="{key}">', body), key
    lev = body[body.index('data-eg-paper="leviathan2023"'):]
    lev = lev[:lev.index("</div>")]
    assert "Yaniv Leviathan, Matan Kalman and Yossi Matias" in lev
    assert "https://arxiv.org/abs/2211.17192" in lev
    assert 'class="eg-paper-note"' in lev
    assert "https://doi.org/10.1145/1498765.1498785" in body


def test_glossary_links_land_on_existing_anchors(site):
    built = pages(site)
    glossary_ids = Elements(article(built["glossary/"])).ids()
    linked = 0
    for url, html in built.items():
        doc = Elements(article(html))
        seen = []
        for attrs, ancestors, ancestor_classes in doc.with_class("eg-term-link"):
            linked += 1
            target, frag = resolve(url, attrs["href"])
            assert target == "glossary/", attrs["href"]
            assert frag in glossary_ids, (url, attrs["href"])
            assert frag == attrs["data-eg-term"]
            assert attrs["aria-describedby"] in doc.ids()
            assert not {"h1", "h2", "h3", "h4", "h5", "h6", "code", "pre", "figure"} & set(ancestors), (url, attrs)
            assert ancestors.count("a") == 0
            seen.append(frag)
        assert len(seen) == len(set(seen)), f"{url}: a term is linked more than once"
    assert linked >= 5
    assert "eg-term-link" not in article(built["glossary/"])


def test_headings_and_the_table_of_contents_carry_only_their_own_words(site):
    """A glossary term in a heading is not linked, and no card's text reaches the heading's id or
    the table of contents: Python-Markdown's toc renders each heading through the postprocessors,
    where the glossary's postprocessor once linked 'ridge' and put its definition into both
    (`#the-ridgeridge-point-the-arithmetic-intensity-...`)."""
    from markdown.extensions.toc import slugify

    def words(fragment: str) -> str:
        return " ".join(re.sub(r"<[^>]+>", "", fragment).split())

    checked = 0
    for page in sorted((site / "explainers").glob("*/index.html")):
        html = page.read_text()
        headings = {m.group(2): words(re.sub(r'<a class="headerlink".*?</a>', "", m.group(3)))
                    for m in re.finditer(r'<h([1-6]) id="([^"]+)"[^>]*>(.*?)</h\1>', html, re.S)}
        toc = re.search(r'<nav class="md-nav md-nav--secondary".*?</nav>\s*</div>', html, re.S).group(0)
        entries = re.findall(r'<a href="#([^"]+)" class="md-nav__link">\s*<span class="md-ellipsis">(.*?)</span>', toc, re.S)
        assert entries, page
        for anchor, text in entries:
            assert anchor in headings, (page, anchor)
            assert words(text) == headings[anchor], (page, anchor, words(text))
            assert anchor == slugify(headings[anchor], "-"), (page, anchor, headings[anchor])
            checked += 1
        assert 'class="eg-card"' not in "".join(re.findall(r"<h[1-6][^>]*>.*?</h[1-6]>", article(html), re.S)), page
    assert checked >= 20


def test_glossary_page_covers_the_terms(site):
    body = article((site / "glossary" / "index.html").read_text())
    headings = {re.sub(r"<[^>]+>|¶|&para;", "", h).strip().lower(): i
                for i, h in re.findall(r'<h2 id="([\w-]+)">(.*?)</h2>', body, re.S)}
    assert {t.lower() for t in REQUIRED_TERMS} <= set(headings)
    assert headings["kv cache"] == "kv-cache"


def test_search_indexes_glossary_and_feed_entries(site):
    docs = json.loads((site / "search" / "search_index.json").read_text())["docs"]
    locations = {d["location"]: d for d in docs}
    assert "glossary/#kv-cache" in locations and "keys and values" in locations["glossary/#kv-cache"]["text"]
    assert "feed/#leviathan2023" in locations
    assert "Speculative Decoding" in locations["feed/#leviathan2023"]["title"]


def test_atom_feed_parses_with_one_entry_per_paper(site):
    root = ET.parse(site / "atom.xml").getroot()
    assert root.tag == f"{ATOM}feed"
    for name in ("id", "title", "updated"):
        assert root.find(f"{ATOM}{name}") is not None and root.find(f"{ATOM}{name}").text
    entries = root.findall(f"{ATOM}entry")
    assert len(entries) == len(bib_keys())
    stamp = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$")
    ids = set()
    for e in entries:
        for name in ("id", "title", "updated", "summary"):
            assert (e.findtext(f"{ATOM}{name}") or "").strip(), name
        assert stamp.match(e.findtext(f"{ATOM}updated"))
        assert e.findall(f"{ATOM}author/{ATOM}name")
        alt = [l for l in e.findall(f"{ATOM}link") if l.get("rel", "alternate") == "alternate"]
        assert len(alt) == 1 and alt[0].get("href").startswith(SITE_ORIGINS["mkdocs"] + "feed/#")
        ids.add(e.findtext(f"{ATOM}id"))
    assert len(ids) == len(entries)
    # No build time: the feed is as new as its newest paper.
    assert root.findtext(f"{ATOM}updated") == max(e.findtext(f"{ATOM}updated") for e in entries)
    titles = {e.findtext(f"{ATOM}title") for e in entries}
    assert "Fast Inference from Transformers via Speculative Decoding" in titles


def front_matter(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text().split("---")[1])


def test_read_next_comes_from_front_matter(site):
    import bibtexparser

    papers = {e.key: e for e in bibtexparser.parse_file(str(REPO / "docs" / "feed" / "papers.bib")).entries}
    checked = 0
    for source in sorted((REPO / "docs" / "explainers").glob("*.md")):
        wanted = front_matter(source).get("read_next")
        if not wanted:
            continue
        body = article((site / "explainers" / source.stem / "index.html").read_text())
        block = body[body.index('class="eg-read-next"'):]
        url = f"explainers/{source.stem}/"
        shown = [("#".join(resolve(url, html_text(h))).rstrip("#"), html_text(t))
                 for h, t in re.findall(r'<li><a href="([^"]+)">([^<]+)</a>', block)]
        expected = []
        # Items are strings or {page|paper: ..., why: ...}; shown grouped: explainers, papers, other pages.
        items = [w if isinstance(w, str) else w.get("page") or w["paper"] for w in wanted]
        for item in sorted(items, key=lambda w: 1 if w.startswith("@") else 0 if w.startswith("explainers/") else 2):
            if item.startswith("@"):
                title = " ".join(papers[item[1:]]["title"].replace("{", "").replace("}", "").split())
                expected.append((f"feed/#{item[1:]}", title))
            else:
                target = REPO / "docs" / item
                page_url = item[:-len("index.md")] if item.endswith("index.md") else f"{item[:-3]}/"
                expected.append((page_url, front_matter(target)["title"]))
        assert shown == expected, source.name
        checked += 1
    assert checked >= 1


def test_home_page_lists_explainers_from_front_matter(site):
    import yaml

    body = article((site / "index.html").read_text())
    items = re.findall(r'<li><a href="([^"]+)">([^<]+)</a>(?:<p>([^<]*)</p>)?</li>',
                       body[body.index('class="eg-explainers"'):])
    sources = sorted((REPO / "docs" / "explainers").glob("*.md"))
    assert sorted(h for h, _, _ in items) == sorted(f"explainers/{p.stem}/" for p in sources)
    for href, title, description in items:
        meta = yaml.safe_load((REPO / "docs" / href.rstrip("/")).with_suffix(".md").read_text().split("---")[1])
        assert html_text(title) == meta["title"]
        assert html_text(description) == " ".join(meta.get("description", "").split())


def html_text(s: str) -> str:
    import html

    return html.unescape(s)


# ---- scratch projects ----

CONFIG = """\
site_name: refs test
site_url: {site_url}
theme: {{name: material, font: false}}
plugins: [search, explainer]
markdown_extensions: [pymdownx.superfences]
nav: [index.md, page.md, feed/index.md, glossary/index.md]
"""


def project(tmp_path: Path, page: str, site_url: str = "https://example.org/sub/", bib: str | None = None,
            terms: str | None = None) -> Path:
    docs = tmp_path / "docs"
    (docs / "feed").mkdir(parents=True, exist_ok=True)
    (docs / "glossary").mkdir(parents=True, exist_ok=True)
    (tmp_path / "mkdocs.yml").write_text(CONFIG.format(site_url=site_url))
    (docs / "index.md").write_text("---\ntitle: Home\n---\n\n# Home\n")
    (docs / "page.md").write_text(page)
    for name in ("feed/index.md", "glossary/index.md"):
        shutil.copy(REPO / "docs" / name, docs / name)
    if bib is None:
        shutil.copy(REPO / "docs" / "feed" / "papers.bib", docs / "feed" / "papers.bib")
    else:
        (docs / "feed" / "papers.bib").write_text(bib)
    if terms is None:
        shutil.copy(REPO / "docs" / "glossary" / "terms.yml", docs / "glossary" / "terms.yml")
    else:
        (docs / "glossary" / "terms.yml").write_text(terms)
    return tmp_path


def build(tmp_path: Path):
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sentinel.txt").write_text("from an earlier build")
    return mkdocs_build(site, tmp_path / "mkdocs.yml", strict=True)


def assert_fails(tmp_path: Path, result, where: str, *needles: str):
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert where in out, out
    for needle in needles:
        assert needle in out, out
    assert "Traceback" not in out, out
    site = tmp_path / "site"
    assert sorted(p.name for p in site.iterdir()) == ["sentinel.txt"], "the failed build wrote files"


def test_unknown_citation_key_fails_with_file_line_and_nearest_keys(tmp_path):
    page = "---\ntitle: P\n---\n\n# P\n\nA claim [@leviathan2023].\nAnother [@chen2023; @leviathen2023].\n"
    result = build(project(tmp_path, page))
    assert_fails(tmp_path, result, "docs/page.md:8:", "unknown citation key 'leviathen2023'",
                 "did you mean 'leviathan2023'", "chen2023")


def test_unknown_glossary_term_fails_with_file_line_and_nearest_terms(tmp_path):
    page = "# P\n\nThe [[KV cache]] grows.\n\nSee `[[not a marker]]` and\nthe [[KV cahce|cache]] again.\n"
    result = build(project(tmp_path, page))
    assert_fails(tmp_path, result, "docs/page.md:6:", "unknown glossary term 'KV cahce'", "did you mean 'KV cache'")


def test_citation_in_a_heading_fails(tmp_path):
    result = build(project(tmp_path, "# P\n\n## Why [[KV cache]] grows\n"))
    assert_fails(tmp_path, result, "docs/page.md:3:", "cannot go in a heading")


def test_missing_read_next_page_fails_with_file_and_line(tmp_path):
    page = "---\ntitle: P\nread_next:\n  - \"@leviathan2023\"\n  - explainers/rooflin.md\n---\n\n# P\n"
    tmp = project(tmp_path, page)
    (tmp / "docs" / "explainers").mkdir()
    (tmp / "docs" / "explainers" / "roofline.md").write_text("---\ntitle: Roofline\n---\n\n# Roofline\n")
    result = build(tmp)
    assert_fails(tmp_path, result, "docs/page.md:5:", "no page 'explainers/rooflin.md'",
                 "did you mean 'explainers/roofline.md'")


def test_unknown_read_next_paper_fails_with_file_and_line(tmp_path):
    page = "---\ntitle: P\nread_next: [\"@medusa2024\"]\n---\n\n# P\n"
    result = build(project(tmp_path, page))
    assert_fails(tmp_path, result, "docs/page.md:3:", "unknown feed entry '@medusa2024'")


def test_bad_bibtex_entry_fails_with_its_line(tmp_path):
    bib = (REPO / "docs" / "feed" / "papers.bib").read_text() + "\n@misc{nonote2020,\n  author = {A, B},\n" \
          "  title = {T}, howpublished = {x}, year = {2020}, month = jan\n}\n"
    result = build(project(tmp_path, "# P\n", bib=bib))
    line = bib.split("\n").index("@misc{nonote2020,") + 1
    assert_fails(tmp_path, result, f"docs/feed/papers.bib:{line}:", "needs a 'annote' field")


def test_everything_from_the_data_is_escaped(tmp_path):
    bib = ("@misc{evil2020,\n  author = {Tables, Bobby},\n  title = {<script>alert(1)</script> *not* [a](b)},\n"
           "  howpublished = {\"quoted\" & co},\n  year = {2020},\n  month = jan,\n"
           "  annote = {A note with <b>tags</b>, {{ step(1) }} and $x$.}\n}\n")
    terms = "- term: widget\n  definition: 'A <img src=x onerror=alert(1)> thing with \"quotes\" and *stars*.'\n"
    page = "---\ntitle: P\nread_next: ['@evil2020']\n---\n\n# P\n\nCite [@evil2020] and [[widget]].\n"
    tmp = project(tmp_path, page, bib=bib, terms=terms)
    result = build(tmp)
    assert result.returncode == 0, result.stderr
    for rel in ("page/index.html", "feed/index.html", "glossary/index.html"):
        body = article((tmp / "site" / rel).read_text())
        assert "<script>alert" not in body and "<img src=x" not in body and "<b>tags" not in body, rel
    page_html = article((tmp / "site" / "page" / "index.html").read_text())
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page_html.replace("&#42;", "*")
    assert "<em>not</em>" not in page_html and "*not*" in page_html.replace("&#42;", "*")
    assert "&lt;img src=x onerror=alert(1)&gt;" in page_html
    ET.parse(tmp / "site" / "atom.xml")


def test_atom_links_follow_a_site_url_with_a_subpath(tmp_path):
    tmp = project(tmp_path, "# P\n\nCites [@kwon2023].\n", site_url="https://example.org/docs/inference/")
    result = build(tmp)
    assert result.returncode == 0, result.stderr
    root = ET.parse(tmp / "site" / "atom.xml").getroot()
    self_link = [l.get("href") for l in root.findall(f"{ATOM}link") if l.get("rel") == "self"]
    assert self_link == ["https://example.org/docs/inference/atom.xml"]
    for entry in root.findall(f"{ATOM}entry"):
        alt = [l.get("href") for l in entry.findall(f"{ATOM}link") if l.get("rel") == "alternate"]
        assert alt[0].startswith("https://example.org/docs/inference/feed/#")
    feed = (tmp / "site" / "feed" / "index.html").read_text()
    assert 'href="../atom.xml"' in feed
    assert 'href="../page/">P</a>' in feed


# ---- the core, without MkDocs ----

def test_autolink_links_first_plain_use_only_outside_code_headings_and_links():
    from explainer_gen.render.refs import autolink_html
    from explainer_gen.sources.glossary import Glossary, Term

    g = Glossary([Term("decode", "decode", "One token per step.", ("decoding",), 1),
                  Term("speculative decoding", "speculative-decoding", "Guess & check <fast>.", (), 2),
                  Term("KV cache", "kv-cache", "Keys and values.", (), 3)])
    html = ('<h2 id="x">KV cache and decode</h2><p><code>decode</code> <a href="#">KV cache</a> '
            '<span class="eg-num">decode</span></p><p>Speculative decoding beats decoding; KV caches grow. '
            'A decode step, and KV cache again.</p>')
    out = autolink_html(html, g, lambda t: f"g/#{t.anchor}")
    assert out.startswith('<h2 id="x">KV cache and decode</h2><p><code>decode</code> <a href="#">KV cache</a> '
                          '<span class="eg-num">decode</span></p>')
    links = re.findall(r'data-eg-term="([\w-]+)"[^>]*>([^<]+)</a>', out)
    # "Speculative decoding" wins over "decoding" at its position; plural "KV caches" counts.
    assert links == [("speculative-decoding", "Speculative decoding"), ("decode", "decoding"), ("kv-cache", "KV caches")]
    assert "Guess &amp; check &lt;fast&gt;." in out
    assert out.endswith("A decode step, and KV cache again.</p>")


def test_blocks_holding_a_card_are_marked_and_no_other():
    """Of a body's top-level blocks, exactly those with a citation's or a term's card inside (at
    any depth) get the class that keeps them out of paint containment; a nested list, a void
    element, a class that only begins with the card's name, a single-quoted or unquoted class, an
    attribute that only ends in "class" and a script's text that looks like tags are read right."""
    from explainer_gen.names import CLASS
    from explainer_gen.render.markup import card
    from explainer_gen.render.refs import mark_card_blocks

    cite = card("cite", "Yu et al.", '<a href="#r" aria-describedby="c1">Yu</a>', "c1")
    html = (f'<p>See {cite}.</p>\n<ul>\n<li>a<ul><li><span class="eg-ref-text">b</span></li></ul></li>\n</ul>\n'
            f'<hr />\n<figure class="eg-figure"><img src="x"></figure>\n'
            f"<ol class='k'><li>c <em><span class='{CLASS.ref} eg-term'>t</span></em></li></ol>\n"
            f'<script>if (a<b) s = "</p><p data-class={CLASS.ref}>";</script>\n'
            f'<p data-class="{CLASS.ref}">plain</p>\n<ul class=u><li><span class={CLASS.ref}>u</span></li></ul>')
    out = mark_card_blocks(html)
    assert out.count(CLASS.holds_card) == 3, out
    assert out.startswith(f'<p class="{CLASS.holds_card}">See ') and f"<ol class='{CLASS.holds_card} k'>" in out
    assert f'<p data-class="{CLASS.ref}">plain</p>' in out and f'<ul class="{CLASS.holds_card} u">' in out
    unmarked = out.replace(f' class="{CLASS.holds_card}"', "").replace(f"{CLASS.holds_card} ", "")
    assert unmarked == html.replace("class=u>", 'class="u">')


def test_bibliography_sorts_newest_first_and_formats_short_citations():
    from explainer_gen.sources.bibliography import load_bibliography

    bib = load_bibliography(REPO / "docs" / "feed" / "papers.bib", "docs/feed/papers.bib")
    dates = [p.date for p in bib]
    assert dates == sorted(dates, reverse=True)
    assert bib["leviathan2023"].short == "Leviathan et al., 2023"
    assert bib["williams2009"].venue == "Communications of the ACM 52(4):65–76"
    assert REQUIRED_PAPERS <= set(bib.keys())
    for paper in bib:
        assert paper.note and len(re.findall(r"[.!?](?:\s|$)", paper.note)) <= 2, paper.key


# ---- Read next: grouped by kind, with the author's reason (issue 11) ----

READ_NEXT_GROUP = re.compile(r'<li class="eg-read-next-group" data-eg-kind="(\w+)"><span class="eg-read-next-kind">'
                             r'([^<]+)</span><ul>(.*?)</ul></li>', re.S)
READ_NEXT_ITEM = re.compile(r'<li><a href="([^"]+)">([^<]+)</a>(?:<p>([^<]*)</p>)?</li>')


def read_next_groups(html: str, url: str) -> list[tuple[str, str, list[tuple[str, str, str]]]]:
    """(kind, label, [(target URL path, title, text)]) for each group of a page's Read next."""
    body = article(html)
    block = body[body.index('<ul class="eg-read-next">'):]
    block = block[:block.index("</ul></li></ul>") + len("</ul></li></ul>")]
    return [(kind, html_text(label), [("#".join(resolve(url, html_text(h))).rstrip("#"), html_text(t), html_text(p))
                                      for h, t, p in READ_NEXT_ITEM.findall(items)])
            for kind, label, items in READ_NEXT_GROUP.findall(block)]


def test_every_explainer_reads_next_into_explainers_then_papers(site):
    sources = sorted((REPO / "docs" / "explainers").glob("*.md"))
    assert len(sources) >= 4
    for source in sources:
        url = f"explainers/{source.stem}/"
        groups = read_next_groups((site / "explainers" / source.stem / "index.html").read_text(), url)
        kinds = [kind for kind, _, _ in groups]
        assert kinds[:2] == ["explainers", "papers"] and kinds[2:] in ([], ["pages"]), (source.name, kinds)
        labels = {kind: label for kind, label, _ in groups}
        assert labels["explainers"] == "Explainers" and labels["papers"] == "From the feed"
        for kind, _, items in groups:
            assert items, (source.name, kind)
            for target, _, text in items:
                assert text.strip(), (source.name, target)
                if kind == "explainers":
                    assert target.startswith("explainers/") and target != url, (source.name, target)
                elif kind == "papers":
                    assert target.startswith("feed/#"), (source.name, target)
                else:
                    assert not target.startswith(("explainers/", "feed/#")), (source.name, target)
        # The glossary closes every explainer's list.
        assert groups[-1][2][-1][0] == "glossary/", source.name


def test_speculative_page_reads_next_roofline_batching_then_leviathan_and_chen(site):
    """The seed's order (issue 11), with the page on drafts that branch after the two it names (issue 17)."""
    url = "explainers/speculative-decoding/"
    groups = read_next_groups((site / url / "index.html").read_text(), url)
    targets = [target for _, _, items in groups for target, _, _ in items]
    assert targets == ["explainers/roofline/", "explainers/batching/", "explainers/draft-trees/", "feed/#leviathan2023",
                       "feed/#chen2023", "feed/#sadhukhan2024", "glossary/"]
    titles = [title for _, _, items in groups for _, title, _ in items]
    assert titles[:2] == ["Two phases, two bottlenecks", "A batch is only as fast as its slowest member"]


def test_read_next_shows_the_why_else_the_description(site):
    import bibtexparser

    papers = {e.key: e for e in bibtexparser.parse_file(str(REPO / "docs" / "feed" / "papers.bib")).entries}
    whys = 0
    for source in sorted((REPO / "docs" / "explainers").glob("*.md")):
        url = f"explainers/{source.stem}/"
        shown = {target: text for _, _, items in read_next_groups((site / url / "index.html").read_text(), url)
                 for target, _, text in items}
        for item in front_matter(source).get("read_next", []):
            why = "" if isinstance(item, str) else " ".join(item.get("why", "").split())
            item = item if isinstance(item, str) else item.get("page") or item["paper"]
            if item.startswith("@"):
                note = " ".join(papers[item[1:]]["annote"].split())
                assert shown[f"feed/#{item[1:]}"].endswith(why or note), (source.name, item)
                continue
            page_url = item[:-len("index.md")] if item.endswith("index.md") else f"{item[:-3]}/"
            description = " ".join(front_matter(REPO / "docs" / item).get("description", "").split())
            assert shown[page_url] == (why or description), (source.name, item)
            whys += bool(why)
    assert whys >= 4


def test_read_next_groups_by_kind_whatever_the_written_order():
    from explainer_gen.sources.bibliography import load_bibliography
    from explainer_gen.render.refs import read_next_html
    from explainer_gen.sources.links import PageInfo, parse_read_next, resolve_read_next
    from models.yamlsource import load_yaml

    bib = load_bibliography(REPO / "docs" / "feed" / "papers.bib", "docs/feed/papers.bib")
    pages = {uri: PageInfo(uri, f"docs/{uri}", title, f"About {title}.") for uri, title in
             [("page.md", "P"), ("explainers/a.md", "A"), ("explainers/b.md", "B <&>"), ("glossary/index.md", "G")]}
    front = ('read_next:\n  - glossary/\n  - "@chen2023"\n  - page: explainers/b.md\n    why: "Because <b>."\n'
             '  - {paper: leviathan2023, why: Read it.}\n  - explainers/a.md\n')
    items = parse_read_next(load_yaml(front, "docs/page.md", 2), front.split("\n"), "docs/page.md")
    assert [(t, line) for t, line, _ in items] == [("glossary/", 3), ("@chen2023", 4), ("explainers/b.md", 5),
                                                   ("@leviathan2023", 7), ("explainers/a.md", 8)]
    resolved = resolve_read_next(items, pages, bib, True, "docs/page.md", "page.md")
    html = read_next_html(resolved, pages, bib, lambda uri, anchor: f"/{uri}#{anchor}")
    kinds = re.findall(r'data-eg-kind="(\w+)"><span class="eg-read-next-kind">([^<]+)</span>', html)
    assert kinds == [("explainers", "Explainers"), ("papers", "From the feed"), ("pages", "Elsewhere on the site")]
    entries = READ_NEXT_ITEM.findall(html)
    assert [h for h, _, _ in entries] == ["/explainers/b.md#", "/explainers/a.md#", "/@feed#chen2023",
                                          "/@feed#leviathan2023", "/glossary/index.md#"]
    assert entries[0][1:] == ("B &lt;&amp;&gt;", "Because &lt;b&gt;.")
    assert entries[1][2] == "About A." and entries[4][2] == "About G."
    assert entries[2][2].startswith("Chen et al., 2023. An independent arrival")
    assert entries[3][2] == "Leviathan et al., 2023. Read it."


READ_NEXT_MISTAKES = {
    "unknown key": ("  - page: explainers/roofline.md\n    wy: Because.\n", 5,
                    ["read_next: unknown key 'wy'", "did you mean 'why'"]),
    "page and paper": ("  - {page: explainers/roofline.md, paper: '@chen2023'}\n", 4, ["exactly one of 'page'"]),
    "paper as a page": ("  - page: '@chen2023'\n", 4, ["is a feed key; write it as paper: '@chen2023'"]),
    "empty why": ("  - page: explainers/roofline.md\n    why: ''\n", 5, ["why must be a sentence"]),
    "unknown paper": ("  - paper: medusa2024\n    why: Heads.\n", 4, ["unknown feed entry '@medusa2024'",
                                                                       "did you mean"]),
    "unknown page": ("  - {page: explainers/rooflin.md, why: x}\n", 4, ["no page 'explainers/rooflin.md'"]),
    "listed twice": ("  - explainers/roofline.md\n  - {page: explainers/roofline.md, why: Again.}\n", 5,
                     ["'explainers/roofline.md' is already listed on line 4"]),
    "itself": ("  - page.md\n", 4, ["'page.md' is this page itself"]),
    "not text": ("  - explainers/roofline.md\n  - 12\n", 5, ["12 is not a page path"]),
}


def test_read_next_mistakes_fail_with_file_and_line(tmp_path):
    for name, (items, line, needles) in READ_NEXT_MISTAKES.items():
        root = tmp_path / name.replace(" ", "-")
        page = f"---\ntitle: P\nread_next:\n{items}---\n\n# P\n"
        tmp = project(root, page)
        (tmp / "docs" / "explainers").mkdir()
        (tmp / "docs" / "explainers" / "roofline.md").write_text("---\ntitle: Roofline\n---\n\n# Roofline\n")
        assert_fails(root, build(tmp), f"docs/page.md:{line}:", *needles)


def test_read_next_page_given_as_a_folder_resolves_to_its_index(tmp_path):
    page = "---\ntitle: P\nread_next:\n  - glossary/\n  - {page: feed/, why: Every paper we cite.}\n---\n\n# P\n"
    tmp = project(tmp_path, page)
    result = build(tmp)
    assert result.returncode == 0, result.stderr
    groups = read_next_groups((tmp / "site" / "page" / "index.html").read_text(), "page/")
    assert groups == [("pages", "Elsewhere on the site",
                       [("glossary/", "Glossary", "Short definitions of the terms the explainers use, each with "
                                                  "its own anchor."),
                        ("feed/", "Feed of papers", "Every paper we cite.")])]
