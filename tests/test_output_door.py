"""The one door out (storage/output.py), and the attacks every export format of every benchmark inherits.

For each registered benchmark (and the toy one in tests/), each of its formats (the records export, its own formats,
the harness formats it declares) is exported once into a clean folder to learn what it writes; then into folders
prepared by an attacker or a careless user: a symlink to an outside file at every name it writes, a symlink to an
outside folder at every folder it writes, an ``--out`` holding a quote, an ``--out`` below a regular file. Each case
asserts that no byte is written outside ``--out``, that a refusal is one line naming what it refused, and that the
export otherwise succeeds. A guard keeps every write in the project behind the door."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemas.config import BlobSettings, CatalogSettings, ExportSettings, Settings
from storage import open_storage
from storage.output import OutputError, OutputFolder
from storage.paths import OutsideRoot
from tasks import benchmarks

ROOT = Path(__file__).resolve().parents[1]
SECRET = b"outside: must never change"


# -- the door itself --------------------------------------------------------------------------------------


def test_the_door_writes_below_its_root_and_refuses_the_ways_out(tmp_path: Path) -> None:
    out = OutputFolder(tmp_path / "out" / "made" / "on demand")
    assert out.save_text("hi", "a", "b.txt").read_text() == "hi"
    victim = tmp_path / "victim.txt"
    victim.write_bytes(SECRET)
    (out.root / "link.txt").symlink_to(victim)
    (out.root / "linked").symlink_to(tmp_path, target_is_directory=True)
    for parts in (("link.txt",), ("linked", "x.txt"), ("..", "x.txt"), ("a/../../x.txt",), ("/etc/x",)):
        with pytest.raises(OutsideRoot) as refused:
            out.save_bytes(b"attack", *parts)
        assert "\n" not in str(refused.value)
    assert victim.read_bytes() == SECRET and not (tmp_path / "x.txt").exists()
    (tmp_path / "plain").write_text("a file")
    with pytest.raises(OutputError, match=r"plain exists and is not a folder"):
        OutputFolder(tmp_path / "plain" / "below")
    assert out.save_text("q", "it's.txt").name == "it's.txt"


# -- the attack kit over every export format --------------------------------------------------------------


@pytest.fixture(scope="module")
def toy_registered() -> Iterator[None]:
    from tests.support.toy_benchmark import registered

    with registered():
        yield


def _cases() -> list[tuple[str, str]]:
    """(benchmark, format) for every format of every registered benchmark, the toy one registered as a fifth."""
    from tests.support.toy_benchmark import registered

    with registered():
        return [(plugin.name, fmt) for plugin in benchmarks.every()
                for fmt in ("records", *(f.name for f in plugin.exports), *plugin.harness_formats)]


CASES = _cases()


def test_every_registered_benchmark_declares_a_release_for_the_kit(toy_registered: None) -> None:
    assert all(plugin.attack_kit().release for plugin in benchmarks.every()), "declare a Kit with a release"
    assert "toy" in {name for name, _ in CASES}


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory, toy_registered: None) -> dict[str, tuple[Settings, str]]:
    """A release of each benchmark, made by its kit's own code."""
    made = {}
    for plugin in benchmarks.every():
        root = tmp_path_factory.mktemp(f"release-{plugin.name}")
        settings = Settings(catalog=CatalogSettings(path=root / "catalog.duckdb"),
                            blobs=BlobSettings(uri=f"file://{root}/blobs"), export=ExportSettings(folder=root / "x"))
        made[plugin.name] = (settings, plugin.attack_kit().release(settings, root / "work"))
    return made


def _export(settings: Settings, name: str, fmt: str, tag: str, out: Path) -> None:
    from storage.releases import export_release

    storage = open_storage(settings)
    if fmt == "records":
        export_release(storage.catalog, storage.blobs, tag, out)
        return
    plugin = benchmarks.get(name)
    formats = {**{f.name: f for f in plugin.exports}, **plugin.harness_exports()}
    formats[fmt].export(storage.catalog, storage.blobs, tag, out)


def _written(folder: Path) -> tuple[list[Path], list[Path]]:
    """(files, folders) below ``folder``, relative to it."""
    everything = sorted(folder.rglob("*"))
    return ([p.relative_to(folder) for p in everything if p.is_file()],
            [p.relative_to(folder) for p in everything if p.is_dir()])


def _attempt(settings: Settings, name: str, fmt: str, tag: str, out: Path) -> str | None:
    """The export into ``out``: None when it finished, else its refusal (which must be one line)."""
    try:
        _export(settings, name, fmt, tag, out)
    except ValueError as refusal:  # OutsideRoot and OutputError are ValueErrors: the CLI prints them as one line
        assert "\n" not in str(refusal), str(refusal)
        return str(refusal)
    return None


@pytest.mark.parametrize(("name", "fmt"), CASES)
def test_an_export_writes_nothing_outside_its_folder(releases: dict[str, tuple[Settings, str]], tmp_path: Path,
                                                     name: str, fmt: str) -> None:
    settings, tag = releases[name]
    clean = tmp_path / "clean"
    _export(settings, name, fmt, tag, clean)
    files, folders = _written(clean)
    assert files, f"{name} {fmt} wrote nothing"
    outside = tmp_path / "outside"
    outside.mkdir()
    victims = []
    # a symlink to an outside file at every name the format writes
    linked = tmp_path / "linked-files"
    for number, relative in enumerate(files):
        victim = outside / f"victim-{number}"
        victim.write_bytes(SECRET)
        victims.append(victim)
        (linked / relative).parent.mkdir(parents=True, exist_ok=True)
        (linked / relative).symlink_to(victim)
    refusal = _attempt(settings, name, fmt, tag, linked)
    assert refusal is None or "symlink" in refusal
    assert all(v.read_bytes() == SECRET for v in victims)
    # a symlink to an outside folder at every folder it writes
    for relative in [f for f in folders if len(f.parts) == 1]:
        target = tmp_path / "outside-folders" / relative.name
        target.mkdir(parents=True)
        linked_folders = tmp_path / f"linked-folder-{relative.name}"
        linked_folders.mkdir()
        (linked_folders / relative).symlink_to(target, target_is_directory=True)
        refusal = _attempt(settings, name, fmt, tag, linked_folders)
        assert refusal is None or "symlink" in refusal
        assert not any(target.iterdir()), f"{name} {fmt} wrote through the symlinked folder {relative}"
    # a quote in --out is only a name
    quoted = tmp_path / "it's 'here'"
    assert _attempt(settings, name, fmt, tag, quoted) is None
    assert _written(quoted)[0] == files
    # --out below a regular file: one line naming it, nothing written
    (tmp_path / "a-file").write_bytes(SECRET)
    refusal = _attempt(settings, name, fmt, tag, tmp_path / "a-file" / "out")
    assert refusal is not None and "a-file exists and is not a folder" in refusal
    assert (tmp_path / "a-file").read_bytes() == SECRET


# -- the guard ---------------------------------------------------------------------------------------------

# Files that own the folder they write (not a user's --out): each with why.
OWN_FOLDERS = {
    "storage/output.py": "the door itself",
    "storage/blobs.py": "the blob store writes its own content-addressed folder",
    "storage/blob_packs.py": "the blob store's pack files, in its own folder",
    "storage/blob_layout.py": "the blob store's LAYOUT file, in its own folder",
    "storage/catalog_connection.py": "the catalog's own database file and its waiting note",
    "storage/catalog_file.py": "the catalog's own lock file",
    "flows/server.py": "the Prefect home's server state and log",
    "flows/warm.py": "the Prefect home's warm-process log",
    "flows/warm_process.py": "the fork's own stdout/stderr",
    "flows/prefect_database.py": "the Prefect home's database template",
    "annotation_ui/limits.py": "the app's own login-throttling state",
}
# Calls that write where a path they are given says; writers by name that a file may use on a path the door
# checked are listed with the file (OpenCV opens a video by name only).
_WRITERS = {"write_text", "write_bytes", "mkdir", "makedirs", "touch", "symlink_to", "hardlink_to", "to_parquet",
            "to_excel", "write_table", "savefig", "to_csv", "VideoWriter"}
_SHUTIL = {"copyfile", "copy", "copy2", "copytree", "move", "copyfileobj"}
BY_NAME = {("tasks/sources/sample_world.py", "VideoWriter"): "the name is OutputFolder.path's, which refused links"}
_HANDLE_WRITERS = {"to_csv", "savefig", "write_table", "to_parquet", "to_json", "to_excel"}  # fine into a handle


def raw_writes(source: str) -> list[tuple[int, str]]:
    """(line, call) of every write that does not go through the door: a writing ``open``/``os.open``, or a call
    that writes to a path it is given (a handle the door opened is fine for the table and figure writers)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name == "open" and _writing_mode(node):
            found.append((node.lineno, "open"))
        elif name in _SHUTIL and getattr(getattr(node.func, "value", None), "id", "") == "shutil":
            found.append((node.lineno, f"shutil.{name}"))
        elif name in _WRITERS:
            first = node.args[0] if node.args else None
            if name in _HANDLE_WRITERS and isinstance(first, ast.Name) and first.id == "handle":
                continue
            found.append((node.lineno, name))
    return sorted(found)


def _writing_mode(node: ast.Call) -> bool:
    if isinstance(node.func, ast.Attribute) and node.func.attr == "open" and getattr(node.func.value, "id", "") == "os":
        flags = ast.dump(node.args[1]) if len(node.args) > 1 else ""  # read-only: O_RDONLY and no writing flag
        return "O_RDONLY" not in flags or any(f in flags for f in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND",
                                                                   "O_TRUNC"))
    modes = [a for a in node.args[1:2]] + [k.value for k in node.keywords if k.arg == "mode"]
    return any(isinstance(m, ast.Constant) and isinstance(m.value, str) and set(m.value) & set("wax+") for m in modes)


def _project_sources() -> Iterator[Path]:
    for room in ("schemas", "storage", "tasks", "flows", "annotation_ui", "tests/support/toy_benchmark"):
        yield from sorted((ROOT / room).rglob("*.py"))


def test_every_write_goes_through_the_door() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{line}: {call}" for path in _project_sources()
                 if str(path.relative_to(ROOT)) not in OWN_FOLDERS
                 for line, call in raw_writes(path.read_text())
                 if (str(path.relative_to(ROOT)), call) not in BY_NAME]
    assert offenders == [], "write through storage.output.OutputFolder instead:\n" + "\n".join(offenders)


def test_the_guard_sees_a_raw_write() -> None:
    planted = 'def export(out_dir):\n    with open(out_dir / "x.jsonl", "w") as f:\n        f.write("1")\n' \
              '    (out_dir / "y").write_text("2")\n    frame.to_csv(out_dir / "z.tsv")\n' \
              '    os.open(out_dir / "w", os.O_RDONLY | os.O_CREAT)\n    os.open(out_dir / "r", os.O_RDONLY)\n'
    assert [call for _, call in raw_writes(planted)] == ["open", "write_text", "to_csv", "open"]


def test_a_hard_link_or_an_overlong_name_never_writes_outside(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(SECRET)
    out = OutputFolder(tmp_path / "out")
    os.link(victim, out.root / "manifest.json")  # a hard link placed in --out: the same file under two names
    out.save_text("the export's own manifest", "manifest.json")
    assert victim.read_bytes() == SECRET and (out.root / "manifest.json").read_text() == "the export's own manifest"
    with pytest.raises(OutputError, match="cannot be used as a path"):
        OutputFolder(tmp_path / ("z" * 300))
    with pytest.raises(OutputError, match="cannot be used as a path"):
        out.save_text("x", "n" * 300, "file.txt")


def test_a_folder_swapped_for_a_symlink_after_the_check_is_not_written_through(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The race: a component checked as a folder becomes a symlink before the file is opened."""
    import storage.output as door

    outside = tmp_path / "outside"
    (outside / "b").mkdir(parents=True)  # what the swapped-in link leads to has the folder the write expects
    out = OutputFolder(tmp_path / "out")
    made = door._make_folders

    def swap_after_making(path: Path, top: Path | None) -> None:
        made(path, top)
        if (out.root / "a").is_dir() and not (out.root / "a").is_symlink():
            os.rename(out.root / "a", tmp_path / "moved")
            (out.root / "a").symlink_to(outside, target_is_directory=True)

    monkeypatch.setattr(door, "_make_folders", swap_after_making)
    with pytest.raises(OutsideRoot, match="is a symlink inside the output folder"):
        out.save_text("attack", "a", "b", "x.txt")
    assert list((outside / "b").iterdir()) == []
    sub = out.sub("c")
    (tmp_path / "elsewhere").mkdir()
    os.rename(sub.root, tmp_path / "moved-c")
    sub.root.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    monkeypatch.setattr(door, "_make_folders", made)
    with pytest.raises(OutsideRoot):
        sub.save_text("attack", "x.txt")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_device_or_a_pipe_where_a_file_goes_is_left_alone(tmp_path: Path) -> None:
    """``--png /dev/null``: the name is a device, never unlinked and replaced (as root that would remove it)."""
    out = OutputFolder(tmp_path / "out")
    os.mkfifo(out.root / "chart.png")
    (out.root / "folder.png").mkdir()
    for name in ("chart.png", "folder.png"):
        with pytest.raises(OutputError, match="exists and is not a regular file"):
            out.save_bytes(b"png", name)
    assert (out.root / "chart.png").is_fifo() and (out.root / "folder.png").is_dir()
