"""The one door in (tasks/sources/door.py): what it reads and what it refuses (links out, large files, bombs,
pipes and devices, a file swapped for a link after its check), and the guard that keeps the benchmarks' readers
behind the door."""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storage.paths import OutsideRoot
from tasks import benchmarks
from tasks.kits import sample_png
from tasks.sources.door import Limits, SourceFolder, entries_of
from tasks.sources.rows import RowError
from tests.support.source_attacks import SECRET_TEXT, bomb_png, outside_files

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def toy_registered() -> Iterator[None]:
    from tests.support.toy_benchmark import registered

    with registered():
        yield


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    return outside_files(tmp_path / "secret")


# -- the door ------------------------------------------------------------------------------------------------------


def test_a_json_list_is_read_entry_by_entry_and_a_bad_entry_refused_alone() -> None:
    text = ('[\n {"a": 1},\n {"b": NaN},\n {"c": 1, "c": 2},\n "\udcff",\n {"big": 123456789012345678901234567890},\n'
            ' {"inf": 1e400},\n [' + "[" * 50_000 + '"]"' + "]" * 50_000 + '],\n {"ok": 2}\n]')
    entries = list(entries_of(text, "f.json"))
    assert [(index, line, value) for index, line, _, value, why in entries if not why] == [(0, 2, {"a": 1}),
                                                                                           (7, 9, {"ok": 2})]
    reasons = [why for *_, why in entries if why]
    assert ["NaN" in reasons[0], "appears twice" in reasons[1], reasons[2], "beyond 64 bits" in reasons[3],
            "1e400" in reasons[4], reasons[5]] == [True, True, "not UTF-8 text", True, True, "nested too deep to read"]
    with pytest.raises(RowError, match="expected a JSON list or object"):
        list(entries_of('"just text"', "f.json"))


def test_the_door_refuses_links_out_large_files_and_bombs(tmp_path: Path, secret: Path) -> None:
    folder = tmp_path / "source"
    folder.mkdir()
    (folder / "link.txt").symlink_to(secret / "outside.txt")
    (folder / "bomb.png").write_bytes(bomb_png())
    (folder / "big.json").write_text("[" + "1," * 600 + "1]")
    (folder / "cut.png").write_bytes(sample_png(3)[:60])
    door = SourceFolder(folder, limits=Limits(document_bytes=1000))
    with pytest.raises(OutsideRoot, match="symlink leading outside"):
        door.read_bytes("link.txt")
    with pytest.raises(OutsideRoot, match="outside the source root"):
        door.read_bytes("../secret/outside.txt")
    with pytest.raises(RowError, match="12000 x 12000 pixels, more than the 120,000,000"):
        door.read_image("bomb.png")
    with pytest.raises(RowError, match="bytes, more than the 1,000 this reader takes"):
        door.read_json("big.json")
    with pytest.raises(RowError, match="not a complete image"):
        door.read_image("cut.png")
    assert [name for name, why in door.walk() if why] == ["link.txt"]
    assert SourceFolder(folder, allow_symlinks_outside=True).read_bytes("link.txt") == SECRET_TEXT


def test_pipes_devices_long_names_bom_and_zip_bombs_are_refused_in_one_line(tmp_path: Path) -> None:
    import io
    import zipfile

    folder = tmp_path / "source"
    folder.mkdir()
    os.mkfifo(folder / "pipe.jsonl")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    door = SourceFolder(folder, allow_symlinks_outside=True)
    for name in ("pipe.jsonl", "zero.jsonl"):  # no size to check, and no end: never read
        with pytest.raises(RowError, match="not a regular file"):
            door.read_bytes(name)
    with pytest.raises(RowError, match="cannot be looked up"):
        door.is_file("x" * 300 + ".jpg")
    assert not door.exists("a/" * 3000 + "x.jpg")
    (folder / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps([{"key": "a"}]).encode())
    assert [value for *_, value, _ in door.json_entries("bom.json")] == [{"key": "a"}]
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/big.xml", b" " * (100 * 1024**2))
    (folder / "bomb.xlsx").write_bytes(bomb.getvalue())
    with pytest.raises(RowError, match="inflates to 104,857,600 bytes"):
        door.read_table("bomb.xlsx")


def test_a_file_swapped_for_a_link_out_after_the_check_is_not_read(tmp_path: Path, secret: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The race: the name is checked, then replaced by a symlink leading out before the file is opened."""
    from storage.paths import SourceRoot

    folder = tmp_path / "source"
    folder.mkdir()
    door = SourceFolder(folder)
    checked = SourceRoot.inside

    def swapped_after_the_check(root: SourceRoot, candidate: Any) -> Path:
        path = checked(root, candidate)
        path.unlink()
        path.symlink_to(secret / "outside.txt")
        return path

    monkeypatch.setattr(SourceRoot, "inside", swapped_after_the_check)
    for read in (lambda: door.read_bytes("rows.jsonl"), lambda: list(door.lines("rows.jsonl")),
                 lambda: door.open_binary("rows.jsonl").read()):
        (folder / "rows.jsonl").unlink(missing_ok=True)
        (folder / "rows.jsonl").write_text('{"a": 1}\n')
        with pytest.raises(OutsideRoot, match="since it was checked"):
            read()


# -- the guard ---------------------------------------------------------------------------------------------------

# What the guard looks for: a call that reads a file by its path, outside the door.
_READERS = {"read_text", "read_bytes", "iterdir", "glob", "rglob", "listdir", "scandir", "load_json", "read_table",
            "read_parquet", "read_excel", "read_csv", "read_json", "ParquetFile", "VideoCapture", "imread", "loadtxt"}
_DOORS = {"door", "root", "self", "regions_door"}  # the names the code gives a SourceFolder
# Reads a room may do: its own state, or a path the door checked that a library opens by name.
OWN_READS = {
    ("tasks/evaluate/report.py", "read_bytes"): "the report's own plots, which it wrote",
    ("tasks/webplan/importers.py", "pq.ParquetFile"): "a Parquet shard streamed by name from SourceFolder.by_name",
    ("tasks/webplan/importers.py", "pq.read_table"): "GUIAct's images table, by name from SourceFolder.by_name",
    ("flows/runners.py", "read_text"): "the Dask settings file the configuration names",
    ("flows/warm_logging.py", "read_text"): "Prefect's logging template, compared with the one Prefect itself read",
}
OWN_ROOMS = {"flows/server.py": "the Prefect home's server state", "flows/home.py": "the Prefect home's server state",
             "flows/warm.py": "the warm process's own state", "flows/warm_process.py": "the warm process's own state",
             "tasks/sources/door.py": "the door itself"}


def raw_reads(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        owner = getattr(getattr(node.func, "value", None), "id", "")
        if owner in _DOORS:
            continue
        call = f"{owner}.{name}" if owner else name
        if name == "open" and owner in ("", "Image", "av", "h5py", "os", "io"):
            first = node.args[0] if node.args else None
            if not (isinstance(first, ast.Call) and getattr(first.func, "attr", "") == "BytesIO"):
                found.append((node.lineno, call))
        elif name in _READERS or (owner, name) in (("json", "load"), ("h5py", "File")):
            found.append((node.lineno, call))
    return sorted(found)


def _reader_sources() -> Iterator[Path]:
    rooms = (*(plugin.package.replace(".", "/") for plugin in benchmarks.every()), "tasks/evaluate", "tasks/exporting",
             "tasks/models", "tasks/sources", "flows", "annotation_ui", "tests/support/toy_benchmark")
    for room in rooms:
        yield from sorted((ROOT / room).rglob("*.py"))


def test_the_benchmarks_read_only_through_the_door() -> None:
    offenders = []
    for path in _reader_sources():
        relative = str(path.relative_to(ROOT))
        if relative in OWN_ROOMS:
            continue
        offenders += [f"{relative}:{line}: {call}" for line, call in raw_reads(path.read_text())
                      if (relative, call) not in OWN_READS]
    assert offenders == [], "read through tasks.sources.door.SourceFolder instead:\n" + "\n".join(offenders)


def test_the_read_guard_sees_a_raw_read() -> None:
    planted = ('def load(folder):\n    rows = json.loads((folder / "a.json").read_text())\n'
               '    with open(folder / "b.txt") as f:\n        f.read()\n    Image.open(folder / "c.png")\n'
               '    door.read_json("fine.json")\n    Image.open(io.BytesIO(data))\n')
    assert [call for _, call in raw_reads(planted)] == ["read_text", "open", "Image.open"]


def test_every_registered_importer_room_is_guarded() -> None:
    guarded = {path.parent for path in _reader_sources()}
    from schemas import registry

    rooms = {ROOT.joinpath(*target.split(":")[0].split(".")[:-1]) for target in registry.targets().values()}
    assert "toy" in registry.targets() and rooms <= guarded, rooms - guarded
