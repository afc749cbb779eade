"""The one door in (tasks/sources/door.py), the attacks every importer and answer reader inherits, and the guard
that keeps the benchmarks' readers behind the door.

Each importer below starts from a good source holding a good item and an item to break; an attack breaks the
second (a link out of the folder, a truncated or zero-byte or bomb image, NaN, 1e400, a whole number beyond 64
bits, a repeated key, non-UTF-8, nesting too deep, a corrupt table). Every case asserts: the import returns, the
good item is there, the bad one is refused with its file or row and the reason, and no byte of the outside files
reached what was imported."""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas import Producer
from schemas.config import BlobSettings, CatalogSettings, Settings
from storage import open_storage
from storage.paths import OutsideRoot
from tasks.sources.door import Limits, SourceFolder, entries_of
from tasks.sources.rows import RowError

ROOT = Path(__file__).resolve().parents[1]
SECRET_TEXT = b"TOP SECRET: must never be read"


def bomb_png(width: int = 12_000, height: int = 12_000) -> bytes:
    """A PNG whose header claims 144 million pixels (above the door's limit, below Pillow's own) over a few
    hundred bytes: decoding it would take 432 MB."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 4096)) + \
        chunk(b"IEND", b"")


def photo(shade: int, size: int = 240) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), (shade, 255 - shade, 90)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    folder = tmp_path / "secret"
    folder.mkdir()
    (folder / "outside.txt").write_bytes(SECRET_TEXT)
    (folder / "outside.png").write_bytes(photo(255))
    (folder / "outside.json").write_text(json.dumps([{"secret": SECRET_TEXT.decode()}]))
    return folder


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
    (folder / "cut.png").write_bytes(photo(3)[:60])
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


# -- the importers' attack matrix --------------------------------------------------------------------------------

Outcome = tuple[set[str], list[str], bytes]  # good items, problems (file/row and reason), everything imported


def _settings(tmp_path: Path) -> Settings:
    return Settings(catalog=CatalogSettings(path=tmp_path / "catalog.duckdb"),
                    blobs=BlobSettings(uri=f"file://{tmp_path}/blobs"))


def _official_row(uid: str, actions: int) -> dict[str, Any]:
    return {"start_frame": f"{uid}-start.jpg", "atomic_actions": "|".join(f"C moves cup {i}" for i in range(actions)),
            "end_frame_info": [{"category": "cup", "description": "red cup", "relation": ["cup on table"]},
                               {"category": "table", "description": "wooden table", "relation": []}]}


def official_source(src: Path) -> None:
    (src / "images").mkdir(parents=True)
    for number, uid in enumerate(("keep", "bad", "also")):
        (src / "images" / f"{uid}-start.jpg").write_bytes(photo(40 * number))
    (src / "exp_anno_short.json").write_text(json.dumps([_official_row("keep", 12)]))
    # the file the attacks break: its first entry is the bad one, the second must still import
    (src / "exp_anno_med.json").write_text(json.dumps([_official_row("bad", 12), _official_row("also", 12)],
                                                      indent=1))


def official_run(src: Path, tmp_path: Path) -> Outcome:
    from tasks.explore.official import import_official

    storage = open_storage(_settings(tmp_path))
    result = import_official(src, storage, Producer(task="t"))
    good = {r.payload["clip_id"] for r in result.records if r.kind == "explore_instance"}
    problems = [f"{q.payload['source']} {q.payload['locator']}: {q.payload['reason']}" for q in result.quarantined]
    blobs = b"".join(storage.blobs.get(sha) for sha in storage.blobs.iter_addresses())
    return good, problems, blobs + json.dumps([q.payload for q in result.quarantined]).encode()


def _crowd_heads(counts: list[int]) -> str:
    spots = {0: (30, 30), 1: (130, 30), 2: (30, 110), 3: (130, 110)}
    return "\n".join(f"{spots[r][0] + 3 * k} {spots[r][1] + 2 * k} 8 8 1 0" for r, n in enumerate(counts)
                     for k in range(n)) + "\n"


QUADRANTS = [[[0, 0], [100, 0], [100, 80], [0, 80]], [[100, 0], [200, 0], [200, 80], [100, 80]],
             [[0, 80], [100, 80], [100, 160], [0, 160]], [[100, 80], [200, 80], [200, 160], [100, 160]]]


def crowd_source(src: Path) -> None:
    from PIL import Image

    (src / "images").mkdir(parents=True)
    (src / "gt").mkdir()
    for name in ("keep", "bad"):
        Image.new("RGB", (200, 160), (90, 120, 90)).save(src / "images" / f"{name}.png")
        (src / "gt" / f"{name}.txt").write_text(_crowd_heads([3, 4, 2, 3]))
    (src / "regions.json").write_text(json.dumps({"keep": QUADRANTS, "bad": QUADRANTS}))


def crowd_run(src: Path, tmp_path: Path) -> Outcome:
    from tasks.vic.crowd import load_crowd

    scenes, rejected = load_crowd(src)
    return ({s.name for s in scenes}, [f"{r.locator}: {r.reason}" for r in rejected],
            json.dumps([[r.reason, r.raw] for r in rejected]).encode())


def pool_source(src: Path) -> None:
    src.mkdir(parents=True)
    (src / "keep.png").write_bytes(photo(10))
    (src / "bad.png").write_bytes(photo(200))


def pool_run(src: Path, tmp_path: Path) -> Outcome:
    from tasks.vic.images import load_folder

    images, rejected = load_folder(src)
    pixels = b"".join(image.pixels.tobytes() for image in images)
    return {Path(i.name).stem for i in images}, [f"{path}: {why}" for path, why in rejected], pixels


def _trajectory(uid: str) -> dict[str, Any]:
    return {"id": uid, "task": "Search for shoes", "website": "shop.example",
            "steps": [{"screenshot": f"frames/{uid}.png", "action_raw": "[textbox]  Search -> TYPE: shoes"}]}


def webplan_source(src: Path) -> None:
    (src / "frames").mkdir(parents=True)
    for number, uid in enumerate(("keep", "bad")):
        (src / "frames" / f"{uid}.png").write_bytes(photo(60 * number))
    (src / "trajectories.jsonl").write_text(json.dumps(_trajectory("bad")) + "\n" + json.dumps(_trajectory("keep"))
                                            + "\n")


def webplan_run(src: Path, tmp_path: Path) -> Outcome:
    from tasks.webplan.importers import read_trajectories

    imported = read_trajectories(src, "jsonl")
    shots = b"".join(s.screenshot for t in imported.trajectories for s in t.steps)
    return ({t.id for t in imported.trajectories}, [f"{p.locator}: {p.reason}" for p in imported.problems],
            shots + json.dumps([p.raw for p in imported.problems]).encode())


def guiact_source(src: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src.mkdir(parents=True)
    items = [{"uid": f"{uid}_step_00", "image_id": uid, "question": "Buy tickets",
              "actions_label": {"name": "click"}} for uid in ("bad", "keep")]
    (src / "test_data.json").write_text(json.dumps(items, indent=1))
    pq.write_table(pa.table({"image_id": ["bad", "keep"],
                             "base64": [base64.b64encode(photo(n)).decode() for n in (1, 2)]}),
                   src / "test_images.parquet")
    # a second split, which an attack on the first must leave alone
    (src / "train_data.json").write_text(json.dumps([{**items[1], "uid": "also_step_00", "image_id": "also"}]))
    pq.write_table(pa.table({"image_id": ["also"], "base64": [base64.b64encode(photo(3)).decode()]}),
                   src / "train_images.parquet")


def guiact_run(src: Path, tmp_path: Path) -> Outcome:
    from tasks.webplan.importers import read_trajectories

    imported = read_trajectories(src, "guiact")
    return ({t.id for t in imported.trajectories}, [f"{p.locator}: {p.reason}" for p in imported.problems],
            json.dumps([p.raw for p in imported.problems]).encode())


def _items() -> list[Any]:
    from tasks.progress.evaluation import ProgressItem

    return [ProgressItem(key=key, source_row=f"text-normal.jsonl:{n}", trajectory="t", setting="text",
                         modality="text", answerable=True, truth=0.5, closest=1, goal="g", steps=("a", "b"),
                         total_steps=2, demo_images=(), observation_image=None)
            for n, key in enumerate(("keep", "bad"))]


def answers_source(src: Path) -> None:
    src.mkdir(parents=True)
    (src / "answers.json").write_text(json.dumps([{"key": "bad", "answer": "<score>40%</score>"},
                                                  {"key": "keep", "answer": "<score>50%</score>"}], indent=1))


def answers_run(src: Path, tmp_path: Path) -> Outcome:
    from tasks.evaluate.answer_files import read_predictions

    collected, problems = read_predictions(src / "answers.json", _items(), "progress")
    return (set(collected.answers), [f"line {n}: {why}" for n, _, why in problems],
            json.dumps([line for _, line, _ in problems] + list(collected.answers.values())).encode())


def _json_entry(file: str, inside: str) -> Callable[[Path, Path], None]:
    """The first entry of a JSON list file with ``inside`` put into it, as text."""
    def edit(src: Path, secret: Path) -> None:
        text = (src / file).read_text()
        start = text.index("{", text.index("["))
        (src / file).write_text(text[:start + 1] + inside + ", " + text[start + 1:])
    return edit


def _raw_entry(file: str, raw: bytes) -> Callable[[Path, Path], None]:
    def edit(src: Path, secret: Path) -> None:
        data = (src / file).read_bytes()
        start = data.index(b"{", data.index(b"["))
        (src / file).write_bytes(data[:start + 1] + raw + b", " + data[start + 1:])
    return edit


def _link(name: str, target: str) -> Callable[[Path, Path], None]:
    def link(src: Path, secret: Path) -> None:
        (src / name).unlink()
        (src / name).symlink_to(secret / target)
    return link


def _write(name: str, data: Callable[[], bytes]) -> Callable[[Path, Path], None]:
    return lambda src, secret: (src / name).write_bytes(data())


def _cut(name: str) -> Callable[[Path, Path], None]:
    return lambda src, secret: (src / name).write_bytes((src / name).read_bytes()[:70])


def _entry_attacks(file: str) -> list[tuple[str, Callable[[Path, Path], None], str]]:
    return [("nan", _json_entry(file, '"x": NaN'), "NaN"), ("1e400", _json_entry(file, '"x": 1e400'), "1e400"),
            ("64-bit", _json_entry(file, '"x": 123456789012345678901234567890'), "beyond 64 bits"),
            ("repeated-key", _json_entry(file, '"x": 1, "x": 2'), "appears twice"),
            ("not-utf8", _raw_entry(file, b'"x": "\xff\xfe"'), "not UTF-8"),
            ("deep", _json_entry(file, '"x": ' + "[" * 50_000 + "]" * 50_000), "nested too deep")]


def _image_attacks(name: str) -> list[tuple[str, Callable[[Path, Path], None], str]]:
    return [("image-link-out", _link(name, "outside.png"), "symlink leading outside"),
            ("image-truncated", _cut(name), "image"), ("image-empty", _write(name, lambda: b""), "image"),
            ("image-bomb", _write(name, bomb_png), "pixels")]


IMPORTERS: dict[str, tuple[Callable[[Path], None], Callable[[Path, Path], Outcome], set[str], list[Any]]] = {
    "explore-official": (official_source, official_run, {"keep", "also"}, [
        *_entry_attacks("exp_anno_med.json"), *_image_attacks("images/bad-start.jpg"),
        ("file-link-out", _link("exp_anno_med.json", "outside.json"), "exp_anno_med.json file: ", {"keep"})]),
    "vic-crowd": (crowd_source, crowd_run, {"keep"}, [
        *_image_attacks("images/bad.png"), ("gt-link-out", _link("gt/bad.txt", "outside.txt"), "symlink"),
        ("gt-not-utf8", _write("gt/bad.txt", lambda: b"30 30 8 8 1 0\n\xff\xfe 1 1 1 1 1\n"), "not UTF-8"),
        ("two-photos-one-stem", lambda src, secret: (src / "images" / "bad.jpg").write_bytes(photo(9)),
         "two files of one name")]),
    "vic-jigsaw-pool": (pool_source, pool_run, {"keep"}, _image_attacks("bad.png")),
    "webplan-jsonl": (webplan_source, webplan_run, {"keep"}, [
        ("nan", lambda s, x: _line_edit(s, '"x": NaN'), "NaN"), ("1e400", lambda s, x: _line_edit(s, '"x": 1e400'),
                                                                "1e400"),
        ("repeated-key", lambda s, x: _line_edit(s, '"x": 1, "x": 2'), "appears twice"),
        *_image_attacks("frames/bad.png")]),
    "webplan-guiact": (guiact_source, guiact_run, {"keep", "also"}, [
        *_entry_attacks("test_data.json"),
        ("table-empty", _write("test_images.parquet", lambda: b""), "not a readable Parquet file", {"also"}),
        ("table-corrupt", _cut("test_images.parquet"), "not a readable Parquet file", {"also"})]),
    "answers": (answers_source, answers_run, {"keep"}, _entry_attacks("answers.json")),
}


def _line_edit(src: Path, inside: str) -> None:
    lines = (src / "trajectories.jsonl").read_text().splitlines()
    lines[0] = "{" + inside + ", " + lines[0][1:]
    (src / "trajectories.jsonl").write_text("\n".join(lines) + "\n")


# (importer, attack, what it does, the reason a refusal must give, the good items left: all but the bad one, or
# those outside the file a file-wide attack took)
MATRIX = [(kind, attack[0], attack[1], attack[2], attack[3] if len(attack) > 3 else good)
          for kind, (_, _, good, attacks) in IMPORTERS.items() for attack in attacks]


@pytest.mark.parametrize(("kind", "attack", "mutate", "reason", "good"), MATRIX,
                         ids=[f"{k}-{a}" for k, a, *_ in MATRIX])
def test_an_attack_on_one_item_refuses_it_alone(tmp_path: Path, secret: Path, kind: str, attack: str,
                                                mutate: Callable[[Path, Path], None], reason: str,
                                                good: set[str]) -> None:
    make, run, every, _ = IMPORTERS[kind]
    src = tmp_path / "src"
    make(src)
    clean_good, clean_problems, _ = run(src, tmp_path / "clean")
    assert every | {"bad"} <= clean_good and not clean_problems, (clean_good, clean_problems)
    mutate(src, secret)
    found, problems, imported = run(src, tmp_path / "attacked")
    assert good <= found, (found, problems)
    assert "bad" not in found
    assert any(reason in problem for problem in problems), problems
    assert all("\n" not in problem for problem in problems)
    for outside in secret.iterdir():
        data = outside.read_bytes()
        assert data not in imported and hashlib.sha256(data).hexdigest() not in imported.decode("latin-1")
    assert SECRET_TEXT not in imported


def test_every_importer_faces_every_kind_of_attack() -> None:
    kinds = {attack for _, attack, *_ in MATRIX}
    assert {"nan", "1e400", "64-bit", "repeated-key", "not-utf8", "deep", "image-link-out", "image-truncated",
            "image-empty", "image-bomb", "file-link-out", "table-corrupt"} <= kinds
    assert len(MATRIX) >= 40


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
}
OWN_ROOMS = {"flows/server.py": "the Prefect home's server state", "flows/warm.py": "the warm process's own state"}


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
    rooms = ("tasks/progress", "tasks/explore", "tasks/vic", "tasks/webplan", "tasks/evaluate", "tasks/exporting",
             "tasks/models", "flows", "annotation_ui", "tests/toy_benchmark")
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
    from tasks import benchmark

    guarded = {str(p.relative_to(ROOT)).split("/")[1] for p in _reader_sources() if str(p).count("/tasks/")}
    assert set(benchmark.PLUGINS) <= guarded


def test_an_empty_answer_after_a_real_one_is_a_second_answer_not_an_unanswered_item(tmp_path: Path) -> None:
    from tasks.evaluate.answer_files import read_predictions

    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(json.dumps(a) for a in (
        {"key": "keep", "answer": "<score>50%</score>"}, {"key": "keep", "answer": ""},
        {"key": "bad", "answer": " "}, {"key": "bad", "answer": "<score>40%</score>"})) + "\n")
    collected, problems = read_predictions(answers, _items(), "progress")
    assert collected.answers == {"keep": "<score>50%</score>"} and collected.empty == [(3, "bad")]
    assert [(n, why) for n, _, why in problems] == [(2, "a second answer for 'keep'; the first is kept"),
                                                    (4, "a second answer for 'bad'; the first is kept")]


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
        archive.writestr("xl/big.xml", b" " * (600 * 1024**2))
    (folder / "bomb.xlsx").write_bytes(bomb.getvalue())
    with pytest.raises(RowError, match="inflates to 629,145,600 bytes"):
        door.read_table("bomb.xlsx")
