"""The theme's search index holds the explainers' prose, not their controls, data tables or cards.

A card's text (a glossary definition, a paper's reference) sits inside the sentence that links
to it; indexed, it ran into that sentence ("a decode stepDecode: The phase that ...") in every
search result, and repeated the glossary and the feed, which are its home. The controls and data
tables are no text to find. Both hosts' search read `data-search-exclude` (render/markup.py).
"""
from __future__ import annotations

import json
import re

import pytest


pytestmark = pytest.mark.hosts

INDEX = {"mkdocs": ("search/search_index.json", "docs"), "zensical": ("search.json", "items")}


def entries(site, host) -> list[dict]:
    path, key = INDEX[host]
    return json.loads((site / path).read_text())[key]


def explainer_text(site, host) -> str:
    return "\n".join(e["title"] + " " + e["text"] for e in entries(site, host)
                     if e["location"].startswith("explainers/"))


def test_the_prose_captions_and_descriptions_are_indexed(site, host):
    text = explainer_text(site, host)
    assert "a decode step streams nearly every weight of the model" in text
    assert "The same tokens made by plain decoding and by speculative decoding" in text  # a caption
    assert re.search(r"Timeline of 48 tokens on 4 × NVIDIA H100 SXM: plain decoding takes \d+ ms", text)  # a description
    assert "Leviathan et al., 2023" in text  # the citation's link text stays in its sentence


def page_text(site, host, page: str) -> str:
    return "\n".join(e["title"] + " " + e["text"] for e in entries(site, host) if e["location"].startswith(page))


def test_cards_controls_and_data_tables_are_not(site, host):
    text = explainer_text(site, host)
    # A glossary card: its definition, however the host joins text, is not on the explainers.
    assert "The phase that produces output one token per step" not in text
    # A citation card: the reference stands once on the citing page, in its References list.
    reference = "Yaniv Leviathan, Matan Kalman and Yossi Matias"
    assert page_text(site, host, "explainers/speculative-decoding/").count(reference) == 1
    assert "Download every slider position" not in text and "Data table" not in text
    assert "Greyed out, as they would not run" not in text  # the switch's note
    assert not re.search(r"Accelerator\s*NVIDIA H100 SXM\s*AMD MI300X", text)  # a switch: its label and options
    assert "Lookahead k" not in text  # a data table's header
    # The homes of that text still have it.
    everything = "\n".join(e["text"] for e in entries(site, host))
    assert reference in page_text(site, host, "feed/")
    assert "The phase that produces output one token per step" in everything  # the glossary
