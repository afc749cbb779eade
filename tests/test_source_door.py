"""The one door in (tasks/sources/door.py), the attacks every importer and answer reader inherits, and the guard
that keeps the benchmarks' readers behind the door.

Each importer below starts from a good source holding a good item and an item to break; an attack breaks the
second (a link out of the folder, a truncated or zero-byte or bomb image, NaN, 1e400, a whole number beyond 64
bits, a repeated key, non-UTF-8, nesting too deep, a corrupt table). Every case asserts: the import returns, the
good item is there, the bad one is refused with its file or row and the reason, and no byte of the outside files
reached what was imported."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from storage.output import OutputFolder
from storage.paths import OutsideRoot
from tasks import benchmarks
from tasks.kits import Imported, ImporterSample, sample_png
from tasks.sources.door import Limits, SourceFolder, entries_of
from tasks.sources.rows import RowError

PROGRESS_EVALUATION = benchmarks.get("progress").evaluation  # the answer reader's items are its

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


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    folder = tmp_path / "secret"
    folder.mkdir()
    (folder / "outside.txt").write_bytes(SECRET_TEXT)
    (folder / "outside.png").write_bytes(sample_png(255))
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


# -- the importers' attack matrix --------------------------------------------------------------------------------
# Every importer a benchmark declares in its kit (tasks/kits.py; the toy benchmark's included), and the shared
# answer reader, each starting from its good source; the attacks come from what the declaration says the source
# holds, so a new importer gets them all by declaring itself.


def _items() -> list[Any]:
    from tasks.progress.evaluation import ProgressItem

    return [ProgressItem(key=key, source_row=f"text-normal.jsonl:{n}", trajectory="t", setting="text",
                         modality="text", answerable=True, truth=0.5, closest=1, goal="g", steps=("a", "b"),
                         total_steps=2, demo_images=(), observation_image=None)
            for n, key in enumerate(("keep", "bad"))]


def _write_answers(out: OutputFolder) -> None:
    out.save_text(json.dumps([{"key": "bad", "answer": "<score>40%</score>"},
                              {"key": "keep", "answer": "<score>50%</score>"}], indent=1), "answers.json")


def _run_answers(source: Path, work: Path) -> Imported:
    from tasks.evaluate.answer_files import read_predictions

    collected, problems = read_predictions(PROGRESS_EVALUATION, source / "answers.json", _items())
    return Imported(set(collected.answers), [f"line {n}: {why}" for n, _, why in problems],
                    json.dumps([line for _, line, _ in problems] + list(collected.answers.values())).encode())


ANSWERS = ImporterSample(name="answers", write=_write_answers, run=_run_answers, good=("keep",),
                         json_list="answers.json")


def _declared() -> list[ImporterSample]:
    """Every registered benchmark's importers, with the toy benchmark registered as a fifth would be."""
    from tests.support.toy_benchmark import registered

    with registered():
        return [*(sample for plugin in benchmarks.every() for sample in plugin.attack_kit().importers), ANSWERS]


@pytest.fixture(scope="module", autouse=True)
def toy_registered() -> Iterator[None]:
    from tests.support.toy_benchmark import registered

    with registered():
        yield


Mutation = Callable[[Path, Path], None]  # (source, folder of outside files)


def _first_entry(file: str, inside: bytes) -> Mutation:
    """``inside`` put into the first object of a JSON list file (or the first line of a JSON lines file)."""
    def edit(src: Path, secret: Path) -> None:
        data = (src / file).read_bytes()
        start = data.index(b"{", data.index(b"[")) if file.endswith(".json") else data.index(b"{")
        (src / file).write_bytes(data[:start + 1] + inside + b", " + data[start + 1:])
    return edit


def _link(name: str, target: str) -> Mutation:
    def link(src: Path, secret: Path) -> None:
        (src / name).unlink()
        (src / name).symlink_to(secret / target)
    return link


def _write(name: str, data: Callable[[], bytes]) -> Mutation:
    return lambda src, secret: (src / name).write_bytes(data())


def _cut(name: str) -> Mutation:
    return lambda src, secret: (src / name).write_bytes((src / name).read_bytes()[:70])


def _second_stem(name: str) -> Mutation:
    other = ".jpg" if not name.endswith(".jpg") else ".png"
    return lambda src, secret: (src / name).with_suffix(other).write_bytes(sample_png(9))


def _emptied(src: Path, secret: Path) -> None:
    for path in sorted(src.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()


# (name, mutation, the reason a refusal must give, the items that must remain: None for all but the bad one)
Attack = tuple[str, Mutation, str, "set[str] | None"]


def _entry_attacks(file: str) -> list[Attack]:
    inside = [("nan", b'"x": NaN', "NaN"), ("1e400", b'"x": 1e400', "1e400"),
              ("64-bit", b'"x": 123456789012345678901234567890', "beyond 64 bits"),
              ("repeated-key", b'"x": 1, "x": 2', "appears twice"), ("not-utf8", b'"x": "\xff\xfe"', "not UTF-8"),
              ("deep", b'"x": ' + b"[" * 50_000 + b"]" * 50_000, "nested too deep"),
              ("nul", b'"x": "a\\u0000b"', "NUL character")]
    return [(name, _first_entry(file, raw), reason, None) for name, raw, reason in inside]


def attacks_on(sample: ImporterSample) -> list[Attack]:
    """Every attack that applies to what the sample's source holds."""
    spared = set(sample.spared)
    found: list[Attack] = []
    for file in (sample.json_list, sample.json_lines):
        found += _entry_attacks(file) if file else []
    for image in sample.images:
        tag = "" if image == sample.images[0] else f"-{Path(image).stem}"
        found += [(f"image-link-out{tag}", _link(image, "outside.png"), "symlink leading outside", None),
                  (f"image-truncated{tag}", _cut(image), "image", None),
                  (f"image-empty{tag}", _write(image, lambda: b""), "image", None),
                  (f"image-bomb{tag}", _write(image, bomb_png), "pixels", None)]
    for text in sample.texts:
        found += [(f"text-link-out-{Path(text).stem}", _link(text, "outside.txt"), "symlink", None),
                  (f"text-not-utf8-{Path(text).stem}", _write(text, lambda: b"30 30 8 8 1 0\n\xff\xfe 1 1 1 1 1\n"),
                   "not UTF-8", None)]
    for table in sample.tables:
        found += [("table-empty", _write(table, lambda: b""), "not a readable Parquet file", spared),
                  ("table-corrupt", _cut(table), "not a readable Parquet file", spared)]
    for file in sample.whole_files:
        found.append(("file-link-out", _link(file, "outside.json"), f"{file} file: ", spared))
    if sample.stems:
        found.append(("two-files-one-stem", _second_stem(sample.images[0]), "bad", None))
    if sample.names_images:
        data = sample.json_list or sample.json_lines
        found += [("name-dot-dot", _renamed(data, sample.images[0], lambda secret: "../" * 12 + str(secret)[1:]),
                   "outside the source root", None),
                  ("name-absolute", _renamed(data, sample.images[0], str), "outside the source root", None)]
    return found


def _renamed(file: str, image: str, outside: Callable[[Path], str]) -> Mutation:
    """The data file's first mention of ``image`` (by its path in the source, else its name) replaced by a path to
    the outside picture."""
    def edit(src: Path, secret: Path) -> None:
        text = (src / file).read_text()
        named = image if image in text else Path(image).name
        assert named in text
        (src / file).write_text(text.replace(named, outside(secret / "outside.png"), 1))
    return edit


MATRIX = [(sample, *attack) for sample in _declared() for attack in attacks_on(sample)]


@pytest.mark.parametrize(("sample", "attack", "mutate", "reason", "remaining"), MATRIX,
                         ids=[f"{sample.name}-{attack}" for sample, attack, *_ in MATRIX])
def test_an_attack_on_one_item_refuses_it_alone(tmp_path: Path, secret: Path, sample: ImporterSample, attack: str,
                                                mutate: Mutation, reason: str, remaining: set[str] | None) -> None:
    src = tmp_path / "src"
    sample.write(OutputFolder(src))
    clean = sample.run(src, tmp_path / "clean")
    assert set(sample.good) | {"bad"} <= clean.good and not clean.problems, (clean.good, clean.problems)
    mutate(src, secret)
    attacked = sample.run(src, tmp_path / "attacked")
    assert (set(sample.good) if remaining is None else remaining) <= attacked.good, attacked
    assert "bad" not in attacked.good
    assert any(reason in problem for problem in attacked.problems), attacked.problems
    assert all("\n" not in problem for problem in attacked.problems)
    for outside in secret.iterdir():
        data = outside.read_bytes()
        assert data not in attacked.taken and hashlib.sha256(data).hexdigest() not in attacked.taken.decode("latin-1")
    assert SECRET_TEXT not in attacked.taken


@pytest.mark.parametrize("sample", _declared(), ids=lambda s: s.name)
def test_an_empty_source_imports_nothing_and_says_nothing_went_wrong_with_a_traceback(tmp_path: Path,
                                                                                    sample: ImporterSample) -> None:
    src = tmp_path / "src"
    sample.write(OutputFolder(src))
    _emptied(src, tmp_path)
    if sample is ANSWERS:  # an answers file is one named file: the one-line refusal is evaluate's (test_evaluate)
        return
    assert sample.run(src, tmp_path / "work").good == set()


def test_every_importer_faces_every_kind_of_attack() -> None:
    kinds = {attack for _, attack, *_ in MATRIX}
    assert {"nan", "1e400", "64-bit", "repeated-key", "not-utf8", "deep", "nul", "image-link-out", "image-truncated",
            "image-empty", "image-bomb", "file-link-out", "table-corrupt", "two-files-one-stem", "name-dot-dot",
            "name-absolute"} <= kinds
    names = {sample.name for sample, *_ in MATRIX}
    assert {"progress-published", "explore-official", "vic-crowd", "vic-jigsaw-pool", "webplan-jsonl",
            "webplan-guiact", "toy-counts", "answers"} <= names
    assert len(MATRIX) >= 60


def test_every_registered_benchmark_declares_its_importers() -> None:
    assert all(plugin.attack_kit().importers for plugin in benchmarks.every())


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


def test_an_empty_answer_after_a_real_one_is_a_second_answer_not_an_unanswered_item(tmp_path: Path) -> None:
    from tasks.evaluate.answer_files import read_predictions

    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(json.dumps(a) for a in (
        {"key": "keep", "answer": "<score>50%</score>"}, {"key": "keep", "answer": ""},
        {"key": "bad", "answer": " "}, {"key": "bad", "answer": "<score>40%</score>"})) + "\n")
    collected, problems = read_predictions(PROGRESS_EVALUATION, answers, _items())
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


def test_an_answers_file_rewritten_after_the_run_key_was_made_is_refused(tmp_path: Path) -> None:
    from tasks.evaluate.answer_files import read_predictions
    from tasks.sources.rows import RowError

    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"key": "keep", "answer": "<score>50%</score>"}) + "\n")
    named = hashlib.sha256(answers.read_bytes()).hexdigest()  # what prepare-evaluation put in the run key
    assert set(read_predictions(PROGRESS_EVALUATION, answers, _items(), named)[0].answers) == {"keep"}
    answers.write_text(json.dumps({"key": "keep", "answer": "<score>90%</score>"}) + "\n")
    with pytest.raises(RowError, match="changed since this evaluation began"):
        read_predictions(PROGRESS_EVALUATION, answers, _items(), named)


def test_a_bad_row_of_a_prediction_table_is_refused_alone_and_suffixes_are_read_in_any_case(tmp_path: Path) -> None:
    """VLMEvalKit's TSV: a row with a field too many, or with bytes that are not UTF-8, is its own refusal; a
    prediction spanning lines (quoted) is one row. An ``.XLSX`` is a sheet, not text."""
    import pandas as pd

    from tasks.evaluate.answer_files import read_predictions

    (tmp_path / "answers.tsv").write_bytes(b'index\tprediction\nbad\t40%\textra\nkeep\t"<score>50%\nsure</score>"\n'
                                           b"other\t\xff\n")
    collected, problems = read_predictions(PROGRESS_EVALUATION, tmp_path / "answers.tsv", _items())
    assert collected.answers == {"keep": "<score>50%\nsure</score>"}
    assert [(n, why) for n, _, why in problems] == [(2, "3 fields, the header has 2"), (4, "not UTF-8 text")]  # rows
    pd.DataFrame({"index": ["keep"], "prediction": ["<score>50%</score>"]}).to_excel(tmp_path / "UP.XLSX", index=False)
    read = read_predictions(PROGRESS_EVALUATION, tmp_path / "UP.XLSX", _items())[0]
    assert read.answers == {"keep": "<score>50%</score>"}


def test_a_name_from_a_row_cannot_break_or_forge_a_line(tmp_path: Path) -> None:
    """A frame name holding a newline and an escape sequence is refused in a reason that stays one line."""
    from schemas import Producer
    from tasks.progress.kit import write_published
    from tasks.progress.published import FrameFolder, import_folder

    write_published(OutputFolder(tmp_path))
    text = (tmp_path / "visual_same_view.jsonl").read_text()
    forged = "../../secret/\nFAKE LINE: everything fine\n\x1b[31m../x.png"
    (tmp_path / "visual_same_view.jsonl").write_text(text.replace('"o1.png"', json.dumps(forged), 1))
    from storage import open_storage
    from tasks.kits import kit_settings

    storage = open_storage(kit_settings(tmp_path / "work"))
    result = import_folder(tmp_path, Producer(task="t"), FrameFolder(tmp_path / "frames", storage))
    (refused,) = result.quarantined
    for text in (refused.payload["reason"], refused.status_reason):
        assert "\n" not in text and "\x1b" not in text and "\\nFAKE LINE" in text
