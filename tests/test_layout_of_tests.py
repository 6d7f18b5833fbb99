"""The test suite's own layout (issue 30): what more than one test module uses lives in a helper
module (tests/helpers.py, or tests/stats.py for the samplers' statistics), so no test module
imports another, neither at its top nor inside a function. A test module that borrowed from
another would run the other's imports, and its tier (tests/conftest.py) would hang on what the
other happens to call; a helper that asserts what a test asserts is a function of helpers, which
the test and any other caller both call."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def names_of_test_modules(folder: Path = TESTS) -> set[str]:
    """The import names of the test modules in `folder`: every test_*.py."""
    return {p.stem for p in folder.glob("test_*.py")}


def imports_of_test_modules(source: str, test_modules: set[str]) -> list[tuple[int, str]]:
    """(line, module) of each import anywhere in `source` (at its top, in a function, a class or a
    branch) of one of `test_modules`: `import m`, `from m import x`, `from . import m` and
    `importlib.import_module("m")` or `__import__("m")` with the name written out."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ([node.module] if node.module else []) + ([alias.name for alias in node.names] if node.level else [])
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id == "__import__"))):
            names = [node.args[0].value]
        else:
            continue
        found += [(node.lineno, name) for name in names if name.split(".")[0] in test_modules]
    return sorted(found)


def test_no_test_module_imports_another():
    modules = names_of_test_modules()
    assert "test_layout_of_tests" in modules and len(modules) > 10  # the checker sees the suite
    borrowed = {f"tests/{name}.py:{line}": imported for name in sorted(modules)
                for line, imported in imports_of_test_modules((TESTS / f"{name}.py").read_text(encoding="utf-8"),
                                                              modules)}
    assert borrowed == {}, ("a test module imports another; move what it borrows to tests/helpers.py "
                            f"(or tests/stats.py): {borrowed}")


def test_the_checker_catches_a_borrowed_helper_wherever_it_is_imported():
    """Negative control: each way a module can import a test module is caught, at its top and
    inside a function, a method or a branch; importing helper modules and libraries is not."""
    modules = {"test_errors", "test_reader", "test_pictures", "test_sampling"}
    source = '''
import os
import test_reader as reader
from helpers import serve
from stats import DELTA
from test_errors import assert_fails, build_page

def test_something(tmp_path):
    from test_pictures import screenshot_rgb
    import importlib
    importlib.import_module("test_sampling")
    importlib.import_module("helpers")

class TestMore:
    def test_it(self):
        if True:
            __import__("test_errors")
            from . import test_reader
'''
    assert imports_of_test_modules(source, modules) == [
        (3, "test_reader"), (6, "test_errors"), (9, "test_pictures"), (11, "test_sampling"), (17, "test_errors"),
        (18, "test_reader")]
    assert imports_of_test_modules("import os\nfrom helpers import serve\nimport stats\n", modules) == []
