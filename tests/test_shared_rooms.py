"""The shared rooms name no benchmark (docs/adding-a-benchmark.md): they ask the registry (tasks.benchmarks.get).

A file under a shared room breaks the rule when it imports a benchmark's folder (``tasks.<name>``), has an
identifier made of a benchmark's name (``PROGRESS``, ``explore_items``, ``freeze_progress_releases``), or a string
that is a benchmark's name, one of its review queues or one of its modules. Prose (comments, docstrings that merely
mention a paper) is not looked at.

``ALLOWED`` may list a file with a count and why (empty since issue 16); a count may only go down: a new violation
fails, and so does an entry whose file now has fewer. No function in the shared rooms is over 80 lines either.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import schemas.payloads
from schemas.records import Payload
from tasks import benchmarks

ROOT = Path(__file__).resolve().parents[1]
SHARED_ROOMS = ("schemas", "storage", "flows", "annotation_ui", "tasks/evaluate", "tasks/models", "tasks/exporting")

# Identifiers in which a benchmark's name is an ordinary word, not the benchmark ("progress" also means how far
# along something is).
GENERIC_IDENTIFIERS = {"progress_line", "show_progress_bar", "set_progress_bar_config", "disable_progress_bar",
                       "create_progress_artifact", "update_progress_artifact"}  # Prefect's own
GENERIC_NAMES = {"progress"}  # bare, as a variable or parameter: a progress bar or a share done

# file -> (violations left, why they are still there); the count may only go down. Issue 16 emptied it: a new
# entry needs a reason a reviewer accepts.
ALLOWED: dict[str, tuple[int, str]] = {}
LONGEST_FUNCTION = 80  # lines, in the shared rooms
# build options whose names are ordinary words every room uses (a seed, a count of items, a rebuild)
GENERIC_OPTIONS = {"seed", "count", "rebuild", "limit", "images", "episodes", "tests", "tasks"}


def _patterns() -> tuple[re.Pattern[str], set[str]]:
    names = list(benchmarks.names())
    words = "|".join(re.escape(n) for n in names)
    identifier = re.compile(rf"(^|_)({words.upper()})(_|$)|^({words})_|_({words})_|^({words})$")
    plugins = list(benchmarks.every())
    # a benchmark's own record kinds (those no shared room defines: ``schemas.payloads``), its review queues and the
    # names of its build and evaluation options, as string literals
    shared_kinds = {model.kind for model in vars(schemas.payloads).values()
                    if isinstance(model, type) and issubclass(model, Payload) and model.kind}
    strings = (set(names) | {r.queue for p in plugins for r in p.reviews}
               | {kind for p in plugins for kind in p.payload_kinds if kind not in shared_kinds}
               | {field for p in plugins if p.build_options for field in p.build_options.model_fields
                  if field not in GENERIC_OPTIONS})
    return identifier, strings


def violations(path: Path) -> list[str]:
    """Each place the file names a benchmark: ``line: what``."""
    identifier, strings = _patterns()
    module = re.compile(rf"^tasks\.({'|'.join(benchmarks.names())})(\.|$)")
    text = path.read_text(encoding="utf-8")
    found, import_lines = [], set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            imported = [alias.name for alias in node.names]
        else:
            continue
        import_lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        found += [f"{node.lineno}: import {name}" for name in imported if module.match(name)][:1]
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.start[0] in import_lines:  # an import is one violation, already counted above
            continue
        if token.type == tokenize.NAME and identifier.search(token.string) and \
                token.string not in GENERIC_IDENTIFIERS | GENERIC_NAMES:
            found.append(f"{token.start[0]}: identifier {token.string}")
        elif token.type == tokenize.STRING and token.string[:1] in "'\"":
            try:
                value = ast.literal_eval(token.string)
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str) and (value in strings or module.match(value)):
                found.append(f"{token.start[0]}: string {value!r}")
    return found


def shared_files() -> list[Path]:
    return sorted(p for room in SHARED_ROOMS for p in (ROOT / room).rglob("*.py"))


def test_the_shared_rooms_name_no_benchmark_beyond_the_shrinking_allow_list():
    problems = []
    for path in shared_files():
        name = path.relative_to(ROOT).as_posix()
        found = violations(path)
        allowed, why = ALLOWED.get(name, (0, ""))
        if len(found) > allowed:
            problems.append(f"{name} names a benchmark {len(found)} times (allowed {allowed}); ask the registry "
                            f"(tasks.benchmarks.get) instead:\n    " + "\n    ".join(found))
        elif len(found) < allowed:
            problems.append(f"{name}: {len(found)} left of the {allowed} allowed ({why}); lower its count in "
                            f"ALLOWED, or remove the entry at 0")
    missing = [name for name in ALLOWED if not (ROOT / name).exists()]
    problems += [f"{name} is in ALLOWED but no longer exists; remove the entry" for name in missing]
    assert not problems, "\n".join(problems)


def test_the_guard_sees_each_way_of_naming_a_benchmark(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""About PROGRESS-BENCH in prose only."""\n'
                      "from tasks.explore.export import export_name\n"
                      "import tasks.progress\n"
                      "if kind == 'progress' or queue == \"scene_correction\":\n"
                      "    Benchmark.EXPLORE, load_explore_items, freeze_progress_releases\n"
                      "progress = show_progress_bar = 1  # a progress bar\n"
                      "if record.kind in ('scene', 'decision') or given['trajectories_dir'] or given['seed']: pass\n")
    assert violations(sample) == [
        "2: import tasks.explore.export", "3: import tasks.progress", "4: string 'progress'",
        "4: string 'scene_correction'", "5: identifier EXPLORE", "5: identifier load_explore_items",
        "5: identifier freeze_progress_releases", "7: string 'scene'", "7: string 'trajectories_dir'"]


def test_no_function_in_the_shared_rooms_is_over_80_lines():
    long = [f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in shared_files() for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and (node.end_lineno or node.lineno) - node.lineno + 1 > LONGEST_FUNCTION]
    assert not long, "split these:\n" + "\n".join(long)
