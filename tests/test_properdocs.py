"""The site also builds under ProperDocs, the maintained fork of MkDocs 1.x, with the same output."""
from __future__ import annotations

import subprocess
import sys

from helpers import REPO, article, env, numbers_in


def test_properdocs_builds_the_same_site(tmp_path, site):
    dest = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "properdocs", "build", "--strict", "-q",
                             "-f", str(REPO / "mkdocs.yml"), "-d", str(dest)],
                            capture_output=True, text=True, env=env(), cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert "properdocs" in subprocess.run([sys.executable, "-m", "properdocs", "--version"], capture_output=True,
                                          text=True, env=env()).stdout.lower()
    # The generated figure files and every page's computed numbers are those of the MkDocs build.
    ours = sorted(p.relative_to(site).as_posix() for p in (site / "assets/explainer").rglob("*"))
    theirs = sorted(p.relative_to(dest).as_posix() for p in (dest / "assets/explainer").rglob("*"))
    assert ours == theirs
    for page in site.rglob("index.html"):
        other = dest / page.relative_to(site)
        if "md-content__inner" in page.read_text():
            assert numbers_in(article(other.read_text())) == numbers_in(article(page.read_text()))
