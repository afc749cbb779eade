"""A benchmark joins through the registry alone: a toy one, defined in tests/support/toy_benchmark/ (one stage, one
review view, one metric) and registered at run time, goes through the main job (build, then release and evaluation
once people reviewed it in the annotation app), with no edit to flows/, annotation_ui/, schemas/ or tasks/evaluate/."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from schemas import Status
from tests.support.app import app_settings


@pytest.fixture
def toy() -> Iterator[None]:
    from tests.support.toy_benchmark import registered

    with registered():
        yield


@pytest.fixture(scope="module")
def prefect_server() -> Iterator[None]:
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


def test_a_toy_benchmark_is_built_reviewed_released_and_evaluated_through_the_registry(toy, tmp_path,
                                                                                       prefect_server):
    from annotation_ui.app import App, build
    from flows.main_job import main_job
    from storage import open_storage

    settings = app_settings(tmp_path)
    settings.export.folder = str(tmp_path / "exports")
    oracle = ("baseline:oracle",)

    first = main_job(settings, benchmarks=["toy"], sources={"toy": {"images": 5}}, evaluate_models=oracle)
    assert first["built"]["toy"]["images"] == {"images": 5, "records": 10, "new": 10}
    assert first["releases"] == {} and first["evaluations"] == []  # nothing confirmed yet
    assert first["benchmarks"]["toy"]["awaiting review"] == {"dots_check": 5}

    # People review in the annotation app: its one generic tab draws the toy's view from the plugin's data.
    app = App(settings)
    assert "Dots" in build(settings, app).config["components"].__repr__()
    person = SimpleNamespace(username="ann1")
    catalog = open_storage(settings).catalog
    shown = []
    while (view := app.take("dots_check", person)) is not None:
        shown.append(view)
        verdict = "reject" if len(shown) == 1 else "accept"  # one count is declared wrong
        app.answer(view["item_id"], verdict, person, shown={"queue": "dots_check"})
    assert len(shown) == 5 and all(v["target_kind"] == "dots_image" for v in shown)
    rejected = catalog.get_record(shown[0]["target_id"])
    assert rejected.status == Status.REJECTED

    second = main_job(settings, benchmarks=["toy"], sources={"toy": {"images": 5}}, evaluate_models=oracle)
    assert second["built"]["toy"]["images"]["new"] == 0  # idempotent: the same images, the same ids
    assert list(second["releases"]) == ["benchwright-toy@1"]
    release = second["releases"]["benchwright-toy@1"]
    assert release["benchmark"] == "toy" and release["export"]
    from storage.releases import load_release

    manifest = load_release(catalog, "benchwright-toy@1")
    assert {e.id for e in manifest.records} == {v["target_id"] for v in shown[1:]}
    [evaluation] = second["evaluations"]
    assert (evaluation["release"], evaluation["benchmark"]) == ("benchwright-toy@1", "toy")
    assert evaluation["metrics"] == {"accuracy": 1.0} and evaluation["counts"]["items"] == 4
    assert second["benchmarks"]["toy"]["current"] == {"benchwright-toy": "benchwright-toy@1"}


def test_the_toy_benchmark_needs_no_edit_to_the_shared_rooms():
    """The toy's names (its module, record kind, queue, classes) appear nowhere outside the test folder's toy."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    names = re.compile(r"toy_benchmark|dots_image|dots_check|DotsEvaluation|DotsImage")
    rooms = ("schemas", "storage", "flows", "annotation_ui", "tasks")
    mentions = [str(path) for room in rooms for path in (root / room).rglob("*.py")
                if names.search(path.read_text(encoding="utf-8"))]
    assert mentions == []
    toy = root / "tests" / "support" / "toy_benchmark"
    assert names.search((toy / "plugin.py").read_text())  # the pattern finds them
