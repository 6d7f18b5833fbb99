"""The draft-trees page as built: what it says of greedy trees is Medusa's published top-b
accuracies, converted here from the file as it stands, set beside the sampler's pair."""
from __future__ import annotations

import re

import yaml

from helpers import REPO, article, numbers_in
from models import sampling

PUBLISHED = yaml.safe_load((REPO / "models" / "published.yaml").read_text())


def _paragraph(html: str, opening: str) -> str:
    m = re.search(r"<p(?:\s[^>]*)?>" + re.escape(opening) + r".*?</p>", html, re.S)  # a class or none
    assert m, f"no paragraph opening {opening!r}"
    return m.group(0)


def test_the_greedy_paragraph_is_medusas_top_b_accuracies_beside_the_pair(site):
    """Medusa's head on Vicuna 7B: top-1, top-4, the conditional rates of the 2nd to 4th choice
    ((c_j - c_(j-1)) / (1 - c_(j-1)), worked here from the published list), the empty share
    1 - c_4; then the sampler's pair at the same first acceptance, whose later rates sit well
    above the head's (the page's claim that its pair flatters width)."""
    c = PUBLISHED["cai2024"]["head1_topk_vicuna7b"]
    rates = [(c[j] - c[j - 1]) / (1.0 - c[j - 1]) for j in (1, 2, 3)]
    pair = sampling.sibling_acceptance(c[0], 4)
    pair_empty = 1.0
    for r in pair:
        pair_empty *= 1.0 - r
    assert all(p > h + 0.1 for p, h in zip(pair[1:], rates))
    expected = [c[0], c[3], *rates, 1.0 - c[3], *pair[1:], pair_empty]
    paragraph = _paragraph(article((site / "explainers/draft-trees/index.html").read_text()), "Under greedy")
    assert numbers_in(paragraph) == [f"{x:.0%}" for x in expected]
    assert "flatters width" in paragraph and "stand-in for the target" in paragraph
