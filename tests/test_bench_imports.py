"""Every import a bench script makes, at the top or inside a function, names a module and names that exist: the
benches run by hand (``make bench``), not in this suite, so a renamed module would otherwise break one unseen."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _imports(script: Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None, line) of every import statement in ``script``."""
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(ast.parse(script.read_text(), filename=str(script))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(node.module, alias.name, node.lineno) for alias in node.names]
    return found


# Optional tools a bench uses only where they are installed (its --help says how): not this project's dependencies.
OPTIONAL = {"lmms_eval", "vlmeval"}


@pytest.mark.parametrize("script", sorted(BENCH.glob("*.py")), ids=lambda path: path.name)
def test_every_import_of_a_bench_resolves(script: Path) -> None:
    missing = []
    for module, name, line in _imports(script):
        if module.split(".")[0] in OPTIONAL:
            continue
        try:
            imported = importlib.import_module(module)
        except ImportError as error:
            missing.append(f"line {line}: {module}: {error}")
            continue
        if name is not None and name != "*" and not hasattr(imported, name):
            try:  # a submodule not yet imported by its package
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"line {line}: {module} has no {name}")
    assert not missing, f"{script.name}: " + "; ".join(missing)


def test_the_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text("def f():\n    from tasks.sources.nowhere import render\n")
    assert _imports(script) == [("tasks.sources.nowhere", "render", 2)]
