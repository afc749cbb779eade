"""The attacks every importer and the answer reader inherit, and the answer reader's own refusals.

Each importer below starts from a good source holding a good item and an item to break; an attack breaks the
second (a link out of the folder, a truncated or zero-byte or bomb image, NaN, 1e400, a whole number beyond 64
bits, a repeated key, non-UTF-8, nesting too deep, a corrupt table). Every case asserts: the import returns, the
good item is there, the bad one is refused with its file or row and the reason, and no byte of the outside files
reached what was imported."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from storage.output import OutputFolder
from tasks import benchmarks
from tasks.kits import Imported, ImporterSample, sample_png
from tests.support.source_attacks import SECRET_TEXT, bomb_png, outside_files

PROGRESS_EVALUATION = benchmarks.get("progress").evaluation  # the answer reader's items are its


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    return outside_files(tmp_path / "secret")


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


# -- the answer reader, and names from a row ----------------------------------------------------------------

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
