"""The layers as pyproject.toml's import-linter contracts write them down, checked by import-linter itself, and no
import loop anywhere in the project (imports inside functions count; imports for type checking only do not)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("schemas", "storage", "tasks", "flows", "annotation_ui")


def test_import_linter_keeps_every_contract() -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Contracts: 4 kept, 0 broken." in done.stdout


def loops(imports: dict[str, set[str]]) -> list[list[str]]:
    """The import loops: every strongly connected group of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:  # recursion depth is bounded by the module count (a few hundred)
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in imports.get(module, ()):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(imports):
        if module not in order:
            visit(module)
    return found


def test_no_module_imports_itself_round_a_loop() -> None:
    import grimp

    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True, cache_dir=None)
    imports = {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}
    assert loops(imports) == []


def test_the_loop_finder_finds_a_loop() -> None:
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_contracts_name_every_benchmark_and_every_shared_module_of_tasks() -> None:
    """A fifth benchmark's folder, or a new shared module beside the contract, is checked as soon as it exists: the
    independence contract lists exactly the registered benchmarks' packages, and the shared rooms' contract every
    other top-level module of ``tasks``."""
    import tomllib

    from tasks import benchmarks

    contracts = {c["name"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
                 ["contracts"]}
    plugins = {benchmarks.get(name).package for name in benchmarks.names()}
    assert set(contracts["Benchmarks are independent of one another"]["modules"]) == plugins
    rooms = contracts["The shared rooms import no benchmark (they ask the registry)"]
    assert set(rooms["forbidden_modules"]) == plugins
    shared = set(rooms["source_modules"])
    modules = {f"tasks.{p.stem if p.is_file() else p.name}" for p in (ROOT / "tasks").iterdir()
               if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    assert sorted(modules - plugins - shared) == []
