"""How the two packages are installed and found: `explainer_gen` and the generic-named `models`."""
from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import REPO


def test_a_foreign_models_package_is_refused_by_name(tmp_path):
    """`models` is a generic import name; the build refuses one that is not installed beside explainer_gen."""
    from explainer_gen.cache import MODELS_ROOT, PACKAGE_ROOT, check_models_package

    check_models_package(MODELS_ROOT, PACKAGE_ROOT)  # ours passes
    foreign = tmp_path / "elsewhere" / "models"
    foreign.mkdir(parents=True)
    (foreign / "__init__.py").write_text("")
    with pytest.raises(ImportError, match="is not explainer-gen's"):
        check_models_package(foreign, PACKAGE_ROOT)
    with pytest.raises(ImportError, match="is not explainer-gen's"):  # beside it, but not ours
        check_models_package(PACKAGE_ROOT.parent / "tests", PACKAGE_ROOT)


def test_altair_loads_only_when_a_chart_is_drawn():
    """Issue 15: a rebuild that computes nothing skips altair's half-second import. Loading the
    generator leaves altair unloaded, with no stand-in for it in `sys.modules` (issue 36: no
    process-wide surprises); the first chart a figure kind draws loads it."""
    code = (
        "import sys\n"
        "import explainer_gen.core\n"
        "from explainer_gen.compute.figures import REGISTRY\n"
        "print('altair' in sys.modules or 'altair.vegalite' in sys.modules)\n"
        "kind = REGISTRY['speedup-vs-batch']\n"
        "spec = kind.chart(kind.sliders).to_dict(validate=False)\n"
        "print('altair.vegalite' in sys.modules, spec['$schema'].rsplit('/', 1)[-1])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr
    before, after, schema = out.stdout.split()
    assert (before, after) == ("False", "True") and schema.startswith("v6")


def test_an_install_holds_every_file_the_package_reads(tmp_path):
    """What setuptools installs (its build_py step, which a wheel packs) holds every file of the
    package that is not Python: the assets, the loader's parts and the contract's schemas, which a
    build reads from the installed package (pyproject's package-data)."""
    import shutil

    copy = tmp_path / "copy"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("explainer_gen", "models"):
        shutil.copytree(REPO / name, copy / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, copy / name)
    out = subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py",
                          "--build-lib", str(tmp_path / "lib")], capture_output=True, text=True, cwd=copy)
    assert out.returncode == 0, out.stderr
    wanted = {p.relative_to(copy) for p in (copy / "explainer_gen").rglob("*") if p.is_file() and p.suffix != ".py"}
    assert {p for p in wanted if p.parts[1:3] == ("assets", "loader")} and \
        {p for p in wanted if p.parts[1:3] == ("client", "schema")}
    installed = {p.relative_to(tmp_path / "lib") for p in (tmp_path / "lib" / "explainer_gen").rglob("*") if p.is_file()}
    assert sorted(map(str, wanted - installed)) == []
