"""What the harness tests share: each benchmark's small release and answers (``CASES``), what every exported row
must hold by its records (``expected_rows``, ``check_row``), the harnesses' documented fields, and readers of the
exported files (VLMEvalKit's image cells, lmms-eval's YAML with its ``!function`` tag, the exported utils.py)."""

from __future__ import annotations

import ast
import base64
import importlib.util
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from schemas import Producer, ReviewItem, Status, make_record
from schemas.config import Settings
from schemas.releases import ReleaseSelection
from storage import open_storage
from storage.releases import create_release
from tasks import benchmarks
from tasks.evaluate.run import eval_settings
from tasks.webplan.instance import WebplanInstance
from tests.support.evaluation import explore_release, progress_release, vic_release, webplan_instances
from tests.support.images import solid_png as png

# VLMEvalKit's custom-dataset columns (vlmeval/dataset/image_base.py, image_mcq.py): every TSV has these
VLMEVALKIT_COLUMNS = ("index", "image", "question", "answer", "category")
# lmms-eval's TaskConfig fields the exported YAML sets (lmms_eval/api/task.py)
LMMS_EVAL_FIELDS = {"task", "dataset_path", "dataset_kwargs", "test_split", "output_type", "doc_to_visual",
                    "doc_to_text", "doc_to_messages", "doc_to_target", "process_results", "metric_list",
                    "generation_kwargs", "lmms_eval_specific_kwargs"}
# the documented placeholder of an image's place in an exported question (README, the dataset card)
IMAGE = "<image>"


def progress_answer(item: Any, n: int) -> str:
    if not item.answerable:
        return "<score>n/a</score>" if n % 2 else "<score>30%</score>"
    percent = round(100 * item.truth)
    return [f"<score>{percent + 10}%</score>", "<score>n/a</score>", f"<score>{max(0, percent - 5)}%</score>",
            "no idea", f"<score>{percent}%</score>"][n % 5]


def explore_answer(item: Any, n: int) -> str:
    return " ".join(f"The {o.category} is {o.description}." for o in item.objects[:1 + n % 2])


def vic_answer(item: Any, n: int) -> str:
    right = item.payload["stage_one_answer"]
    return f"<answer>{right if n % 2 else 'Z'}</answer>"


def webplan_answer(item: Any, n: int) -> str:
    return str(item.payload["answer"]) if n % 2 == 0 else "I cannot tell"


def letter_answer(name: str, item: Any, n: int) -> str:
    """A multiple-choice answer as VLMEvalKit's prompt asks for it, a letter: the right one for even ``n``."""
    right = item.payload["stage_one_answer"] if name == "vic" else str(item.payload["answer"])
    options = item.payload["stage_one_options"] if name == "vic" else item.payload["options"]
    return right if n % 2 == 0 else next(letter for letter in sorted(options) if letter != right)


REVIEW_QUEUE = "harness-test-review"


def _realweb() -> list[WebplanInstance]:
    """Real-web plan questions, two of one distractor strategy and one of the other (so the test's figure, the mean
    of its strategies, is not the mean of its samples)."""
    plans = {letter: f"1. plan {letter}." for letter in "ABCD"}
    return [WebplanInstance(test="realweb", key=f"realweb-{n}", task="Buy a ticket", answer=answer, options=plans,
                            images={"start": png(20 + n)},
                            meta={"strategy": strategy, "dataset": "mind2web", "website": "example.com",
                                  "plan_len": 1, "previous_actions": []})
            for n, (strategy, answer) in enumerate((("shuffle", "A"), ("shuffle", "B"), ("semantic", "C")))]


def webplan_release(settings: Settings, people: bool = True) -> str:
    """The web-planning test instances and three real-web ones, each reviewed: the unattended demo policy accepts
    them, except (``people``) the first, which ann1 accepts, and the second, which ann2 corrects (the release holds
    the corrected version, whose parents name the decision, as a stage's correction does)."""
    from tasks.review import apply_unattended_policy, decide
    from tasks.webplan.records import instance_record

    storage = open_storage(settings)
    put = lambda data, role: storage.put_blob(data, role=role, media_type="image/png")  # noqa: E731
    instances = [*webplan_instances(), *_realweb()]
    records = [instance_record(i, Producer(task="test"), put) for i in instances]
    items = [make_record(ReviewItem(target_id=r.id, queue=REVIEW_QUEUE, question="right?"), benchmark="webplan",
                         producer=Producer(task="test")) for r in records]
    storage.catalog.put_records(records + items)
    if people:
        decide(storage.catalog, items[0], annotator="ann1", verdict="accept")
        decision = decide(storage.catalog, items[1], annotator="ann2", verdict="correct",
                          correction={"task": "Sign in"})
        corrected = instance_record(replace(instances[1], task="Sign in"), Producer(task="apply-correction"), put,
                                    parents=(records[1].id, decision.id))
        storage.catalog.put_records([corrected])
        storage.catalog.set_status([corrected.id], Status.ACCEPTED, reason="corrected by ann2", actor="ann2")
    apply_unattended_policy(storage.catalog, REVIEW_QUEUE)
    return create_release(storage.catalog, storage.blobs, "webplan-test",
                          selection=ReleaseSelection(benchmarks=("webplan",), kinds=("webplan_instance",))).tag


# benchmark -> (release builder, the strategy whose questions the answers are to, an answer per (item, n)); the
# tests run for every registered benchmark, so one missing here fails (KeyError) instead of going untested
CASES: dict[str, tuple[Callable[[Settings], str], str, Callable[[Any, int], str]]] = {
    "progress": (lambda s: progress_release(s, lacking=True)[0], "direct", progress_answer),
    "explore": (explore_release, "final-scene", explore_answer),
    "vic": (lambda s: vic_release(s, ("maze", "jigsaw"), 2), "stage1", vic_answer),
    "webplan": (webplan_release, "instruct", webplan_answer),
}
# what each benchmark's card names as a source of the test release (its mapping's ``source``)
SOURCES = {"progress": "test (", "explore": "test (", "vic": "maze_dataset.LatticeMazeGenerators.gen_dfs (",
           "webplan": "miniwob ("}



def items_of(settings: Settings, tag: str) -> tuple[Any, list[Any]]:
    from storage.releases import load_release

    storage = open_storage(settings)
    manifest = load_release(storage.catalog, tag)
    plugin = benchmarks.release_benchmark(manifest)
    return plugin, plugin.evaluation.items(storage.catalog, manifest, storage.blobs.get)


def truth_of(name: str, item: Any, record: Any, scene: Any, strategy: str) -> dict[str, Any]:
    """What a row of ``item`` must hold, from its record's payload (and EXPLORE's scene record), not from the
    mapping the writers use: the configuration it lands in, the answer (as read back by ``decoded``), options."""
    payload = record.payload
    if name == "progress":
        return {"config": item.setting, "options": {},
                "answer": payload["progress_score"] if payload["answerable"] else None}
    if name == "explore":
        scene = [{"category": o["category"], "description": o["description"], "relation": o["relation"],
                  **({"key_state": o["key_state"]} if o["key_state"] else {})} for o in scene.payload["objects"]]
        return {"config": payload["subset"], "options": {}, "answer": scene}
    if name == "vic":
        if strategy == "stage1":
            return {"config": f"{payload['task']}_stage1", "options": payload["stage_one_options"],
                    "answer": payload["stage_one_answer"]}
        return {"config": f"{payload['task']}_stage2", "options": {}, "answer": payload["open_answer"]}
    form = payload["meta"].get("form")
    return {"config": f"temporal_{form}" if payload["test"] == "temporal" else payload["test"],
            "options": payload["options"], "answer": payload["answer"]}


def decoded(name: str, strategy: str, answer: str) -> Any:
    """A row's answer column as the value ``truth_of`` gives (VLMEvalKit's TSV writes ``n/a`` as ``n/a ``, which its
    pandas reading keeps as text)."""
    if name == "progress":
        return None if answer.strip() == "n/a" else float(answer.rstrip("%")) / 100
    return json.loads(answer) if name == "explore" or strategy == "stage2" else answer


def expected_rows(settings: Settings, tag: str) -> dict[tuple[str, str], dict[str, Any]]:
    """What each exported row must hold, from the release's records: (strategy, record id) -> question, images,
    answer, options, configuration."""
    from storage.releases import load_release

    plugin, items = items_of(settings, tag)
    mapping = plugin.harness_mapping()
    storage = open_storage(settings)
    records = {r.id: r for r in storage.catalog.get_records([e.id for e in load_release(storage.catalog,
                                                                                           tag).records])}
    scenes = {r.payload["instance_id"]: r for r in records.values() if r.kind == "scene"}
    expected = {}
    for strategy in plugin.harness_mapping().strategies:
        for item in items:
            if item.missing:
                continue
            messages, _ = plugin.evaluation.messages(item, eval_settings(plugin.name, strategy), storage.blobs.get,
                                                     0, [])
            parts = [p for m in messages for p in m.parts]
            question = "\n".join(IMAGE if isinstance(p, bytes) else p for p in parts)
            truth = truth_of(plugin.name, item, records[item.key], scenes.get(item.key), strategy)
            choice = mapping.choice_question(item, strategy, question) if truth["options"] else question
            expected[(strategy, item.key)] = {"question": question, "choice": choice, "parts": in_order(parts),
                                              "images": [p for p in parts if isinstance(p, bytes)], **truth}
    return expected


def in_order(parts: list[Any]) -> list[tuple[str, Any]]:
    """A request's parts as a model is asked them: ("image", bytes) and ("text", str) in order, the texts between
    two images as one (joined by newlines, as the exported question joins them)."""
    ordered: list[tuple[str, Any]] = []
    for part in parts:
        if isinstance(part, bytes):
            ordered.append(("image", part))
        elif ordered and ordered[-1][0] == "text":
            ordered[-1] = ("text", f"{ordered[-1][1]}\n{part}")
        else:
            ordered.append(("text", part))
    return ordered


def fingerprinted(parts: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``in_order`` parts with each image as its ``image_fingerprint``."""
    return [(kind, image_fingerprint(value) if kind == "image" else value) for kind, value in parts]


def request_parts(settings: Settings, name: str, items: list[Any]) -> dict[tuple[str, str], list[tuple[str, Any]]]:
    """(strategy, record id) -> the benchmark's own request (``Evaluation.messages``) ``in_order``."""
    plugin = benchmarks.get(name)
    storage = open_storage(settings)
    requests = {}
    for strategy in plugin.harness_mapping().strategies:
        for item in (i for i in items if not i.missing):
            messages, _ = plugin.evaluation.messages(item, eval_settings(name, strategy), storage.blobs.get, 0, [])
            requests[(strategy, item.key)] = in_order([p for m in messages for p in m.parts])
    return requests


def image_fingerprint(image: Any) -> str:
    """An image (encoded, or a PIL image) by its size and RGB pixels, as tests/support/lmms_eval_run.py's stand-in
    model reports the images it is given."""
    import hashlib
    import io

    from PIL import Image

    rgb = (Image.open(io.BytesIO(image)) if isinstance(image, bytes) else image).convert("RGB")
    return f"{rgb.size[0]}x{rgb.size[1]}:{hashlib.sha256(rgb.tobytes()).hexdigest()}"


def same_picture(path: str, data: bytes) -> bool:
    """Whether the image file a harness saved shows the encoded image ``data`` (same size, pixels within what
    saving it again as JPEG changes)."""
    import io

    import numpy as np
    from PIL import Image

    saved, want = Image.open(path).convert("RGB"), Image.open(io.BytesIO(data)).convert("RGB")
    return saved.size == want.size and float(np.abs(np.asarray(saved, float) - np.asarray(want, float)).mean()) < 4


def check_row(name: str, row: dict[str, Any], config: str, want: dict[str, Any], choice: bool = False) -> None:
    """A row against what its record says: its configuration, question (``choice``: a multiple-choice one without
    the benchmark's option list and instruction, as VLMEvalKit's TSV has it), answer, options."""
    assert config == want["config"], (row["index"], config)
    assert row["question"] == (want["choice"] if choice else want["question"])
    answer = decoded(name, row["strategy"], row["answer"])
    assert answer == (pytest.approx(want["answer"], abs=1e-3) if isinstance(want["answer"], float) else want["answer"])
    assert {letter: row[letter] for letter in want["options"]} == want["options"]
    assert not any(row.get(letter) for letter in "ABCD" if letter not in want["options"])


def exported(settings: Settings, name: str, exporter: Callable[..., dict[str, int]], folder: Path
              ) -> tuple[str, dict[str, int], dict[tuple[str, str], dict[str, Any]]]:
    """The benchmark's test release exported by ``exporter``: its tag, the counts, what each row must hold."""
    tag = CASES[name][0](settings)
    storage = open_storage(settings)
    return tag, exporter(storage.catalog, storage.blobs, tag, folder), expected_rows(settings, tag)


def tsv_images(cell: str) -> list[bytes]:
    """A TSV image cell as VLMEvalKit's ``toliststr`` reads it: one base64 string, or a Python list of them."""
    encoded = ast.literal_eval(cell) if cell.startswith("[") else [cell]
    return [base64.b64decode(e) for e in encoded]



def yaml_of(path: Path) -> dict[str, Any]:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")
    return yaml.load(path.read_text(), Loader=Loader)  # a SafeLoader with lmms-eval's one more tag


def utils_of(folder: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"utils_{abs(hash(folder))}", folder / "utils.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def same_figure(value: float | None, want: float | None) -> bool:
    """Equal figures, or both none (lmms-eval's NaN where ``evaluate`` has no value)."""
    if value is None or value != value:
        return want is None or want != want
    return want is not None and value == pytest.approx(want)


def scaled(value: float | None, scale: int) -> float | None:
    return None if value is None else scale * value


def headline_metric(name: str, config: str, metric: str) -> str:
    """``evaluate``'s metric that an lmms-eval metric of a configuration reports (the test's figure for webplan)."""
    if name == "webplan":
        return config.split("_")[0]
    return {"nse": "NSE", "prc": "PRC", "afrr": "AFRR", "uda": "UDA"}.get(metric, metric)
