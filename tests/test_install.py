"""How the two packages are installed and found: `explainer_gen` and the generic-named `models`."""
from __future__ import annotations

import pytest


def test_a_foreign_models_package_is_refused_by_name(tmp_path):
    """`models` is a generic import name; the build refuses one that is not installed beside explainer_gen."""
    from explainer_gen.compute.cache import MODELS_ROOT, PACKAGE_ROOT, check_models_package

    check_models_package(MODELS_ROOT, PACKAGE_ROOT)  # ours passes
    foreign = tmp_path / "elsewhere" / "models"
    foreign.mkdir(parents=True)
    (foreign / "__init__.py").write_text("")
    with pytest.raises(ImportError, match="is not explainer-gen's"):
        check_models_package(foreign, PACKAGE_ROOT)
    with pytest.raises(ImportError, match="is not explainer-gen's"):  # beside it, but not ours
        check_models_package(PACKAGE_ROOT.parent / "tests", PACKAGE_ROOT)
