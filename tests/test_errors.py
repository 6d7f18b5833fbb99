"""Every author mistake fails the build with the file, the line and the valid choices."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from helpers import mkdocs_build

CONFIG = """\
site_name: error test
theme: {name: material, font: false}
plugins: [explainer]
markdown_extensions: [pymdownx.superfences]
"""

GOOD_FENCE = "```explainer\nfigure: speedup-vs-batch\n```\n"


def build_page(tmp_path: Path, markdown: str, strict: bool = False):
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "mkdocs.yml").write_text(CONFIG)
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "docs" / "page.md").write_text(textwrap.dedent(markdown))
    return mkdocs_build(tmp_path / "site", tmp_path / "mkdocs.yml", strict=strict)


def assert_fails(result, line: int, *needles: str):
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert f"docs/page.md:{line}:" in out, out
    for needle in needles:
        assert needle in out, out
    assert "Traceback" not in out, out


CASES = {
    "unknown figure": ("# T\n\n```explainer\nfigure: speedup-vs-bach\n```\n", 4,
                       ["unknown figure 'speedup-vs-bach'", "speedup-vs-batch"]),
    "unknown accelerator": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nscenario:\n  accelerator: h100\n```\n", 6,
                            ["unknown accelerator 'h100'", "h100-sxm", "mi300x"]),
    "unknown model": ("# T\n\n```explainer\nfigure: speedup-vs-batch\nscenario:\n  target: llama-70b\n```\n", 6,
                      ["unknown model 'llama-70b'", "llama-3-70b"]),
    "malformed fence yaml": ("# T\n\n```explainer\nfigure: [speedup-vs-batch\n```\n", 4, ["invalid YAML"]),
    "fence not a mapping": ("# T\n\n```explainer\n- speedup-vs-batch\n```\n", 3, ["must be a YAML mapping"]),
    "missing figure key": ("# T\n\n```explainer\ncaption: hello\n```\n", 4, ["needs a 'figure' key", "speedup-vs-batch"]),
    "unknown fence key": ("# T\n\n```explainer\nfigure: speedup-vs-batch\ncolour: red\n```\n", 5,
                          ["unknown key 'colour'", "caption"]),
    "unclosed fence": ("# T\n\n```explainer\nfigure: speedup-vs-batch\n", 3, ["never closed"]),
    "unknown inline function": ("# T\n\nIt is {{ Ee(0.8, 4) | .1f }} tokens.\n", 3, ["unknown function 'Ee'", "'E'"]),
    "invalid inline format": ("# T\n\nIt is {{ E(0.8, 4) | .1q }} tokens.\n", 3, ["invalid format spec '.1q'"]),
    "unknown inline unit": ("# T\n\nIt takes {{ step(1) | .1f msec }}.\n", 3, ["unknown unit 'msec'", "ms"]),
}


@pytest.mark.parametrize("name", CASES)
def test_author_mistake_fails_with_location(tmp_path, name):
    markdown, line, needles = CASES[name]
    assert_fails(build_page(tmp_path, markdown), line, *needles)


def test_errors_also_fail_strict_builds(tmp_path):
    markdown, line, needles = CASES["unknown figure"]
    assert_fails(build_page(tmp_path, markdown, strict=True), line, *needles)


def test_a_good_page_builds(tmp_path):
    result = build_page(tmp_path, "# T\n\n" + GOOD_FENCE)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site" / "page" / "index.html").read_text().count('class="eg-figure"') == 1


def test_front_matter_lines_are_counted(tmp_path):
    md = "---\ntitle: T\n---\n\n# T\n\n```explainer\nfigure: nope\n```\n"
    assert_fails(build_page(tmp_path, md), 8, "unknown figure 'nope'")
