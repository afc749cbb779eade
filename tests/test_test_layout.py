"""How the tests are laid out: a folder per registered benchmark (tests/<name>/) holding the tests about it, shared
helpers in tests/support/, the rest (the shared rooms) at the top; no test module imports another (what two share
is in tests/support/ or, for fixtures, tests/conftest.py); every test folder a package, so two modules of one name
in two folders do not clash."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tasks import benchmarks

TESTS = Path(__file__).resolve().parent
SUPPORT = "support"


def _module_of(path: Path) -> str:
    return ".".join(("tests", *path.relative_to(TESTS).with_suffix("").parts))


def imported_modules(source: str, module: str) -> Iterator[str]:
    """Every module ``source`` (the module named ``module``) imports, wherever the import is (in a function, too),
    and in any string of Python code it holds (code run in another process); ``from A import b`` gives A and A.b."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package up
                package = module.split(".")[:-node.level]
                base = ".".join([*package, base] if base else package)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value:
            try:
                yield from imported_modules(node.value, module)
            except SyntaxError:
                continue


def is_test_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "tests" and any(part.startswith("test_") for part in parts[1:])


def test_no_test_module_imports_another() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        module = _module_of(path)
        offenders += [f"{path.relative_to(TESTS)}: {name}" for name in imported_modules(path.read_text(), module)
                      if is_test_module(name) and name != module]
    assert offenders == [], "move what is shared into tests/support/ (fixtures: tests/conftest.py):\n" + "\n".join(
        offenders)


def test_the_import_finder_sees_every_way_of_importing_a_test_module() -> None:
    sample = ("import {t}.test_cli\n"  # {t}: so that this file's own strings hold no import the guard would see
              "def f():\n    from {t}.vic import test_vic_maze\n"
              "from . import test_lock\n"
              "from .support import app\n"
              "CODE = 'from {t}.test_evaluate import evaluate; print(1)'\n").format(t="tests")
    found = [name for name in imported_modules(sample, "tests.test_x") if is_test_module(name)]
    assert found == ["tests.test_cli", "tests.test_lock", "tests.vic.test_vic_maze", "tests.test_evaluate",
                     "tests.test_evaluate.evaluate"]


def test_every_test_folder_is_a_registered_benchmarks_or_the_support_package() -> None:
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    assert folders == {*benchmarks.names(), SUPPORT}  # each benchmark has its folder, and no folder is another's
    assert all((TESTS / name / "__init__.py").is_file() for name in folders) and (TESTS / "__init__.py").is_file()
    assert not list((TESTS / SUPPORT).rglob("test_*.py"))  # helpers only: pytest collects nothing there


def test_a_test_module_named_for_a_benchmark_lives_in_its_folder() -> None:
    misplaced = []
    for path in sorted(TESTS.rglob("test_*.py")):
        about = [name for name in benchmarks.names() if path.stem == f"test_{name}" or
                 path.stem.startswith(f"test_{name}_")]
        if about and path.parent != TESTS / about[0]:
            misplaced.append(f"{path.relative_to(TESTS)} belongs in tests/{about[0]}/")
    assert misplaced == []


def test_a_benchmarks_tests_import_no_other_benchmark() -> None:
    """What tests/<name>/ holds is about that benchmark: it imports no other benchmark's package (a test of two
    benchmarks, or of what they share, belongs at the top)."""
    packages = {plugin.name: plugin.package for plugin in benchmarks.every()}
    crossing = []
    for name in packages:
        others = [p for other, p in packages.items() if other != name]
        for path in sorted((TESTS / name).rglob("*.py")):
            crossing += [f"{path.relative_to(TESTS)}: {module}"
                         for module in imported_modules(path.read_text(), _module_of(path))
                         if any(module == p or module.startswith(f"{p}.") for p in others)]
    assert crossing == []
