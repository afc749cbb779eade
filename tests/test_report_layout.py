"""Every benchmark's evaluation report as a person opens it: the page fits 1,440 px wide in Chromium (tables wrap,
images scale), and every chart it draws has its legend outside the data, labelled axes and text of 9 pt or more;
the web-planning tables name their cells in words (the form tasks as the paper does) even for a release with every
cell of the paper; the leaderboard page fits too."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas.config import Settings
from tests.support.browser import CHROMIUM
from tests.support.evaluation import (
    evaluate,
    explore_release,
    progress_release,
    vic_release,
    webplan_instances,
    webplan_release,
)
from tests.support.figures import caught_figures

PAGE = 1440


@pytest.fixture(scope="module")
def page_width() -> Iterator[Callable[[Path], int]]:
    """The width a page needs in Chromium at 1440 x 900 (``scrollWidth``: more than 1,440 scrolls sideways)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": PAGE, "height": 900})

        def width(path: Path) -> int:
            page.goto(path.resolve().as_uri())
            return page.evaluate("document.documentElement.scrollWidth")

        yield width
        browser.close()


# benchmark -> (its release, the model, the strategy: one that draws every chart its reports have)
RUNS: dict[str, Callable[[Settings], tuple[str, str, str | None]]] = {
    "progress": lambda s: (progress_release(s)[0], "baseline:oracle?noise=0.3", "two-stage"),
    "explore": lambda s: (explore_release(s), "baseline:oracle?noise=0.1", None),
    "vic": lambda s: (vic_release(s, ("maze", "jigsaw"), 2), "baseline:oracle?noise=0.1", None),
    "webplan": lambda s: (webplan_release(s), "baseline:random", None),
}


@pytest.mark.parametrize("benchmark", RUNS)
def test_the_report_fits_1440_px_and_its_charts_read(benchmark: str, settings: Settings, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      page_width: Callable[[Path], int]) -> None:
    from tasks.evaluate.engine import report_evaluation

    release, model, strategy = RUNS[benchmark](settings)
    with caught_figures(monkeypatch) as drawn:
        plan, _, result = evaluate(settings, release=release, model=model, strategy=strategy)
        written = report_evaluation(settings, plan, result, out_dir=str(tmp_path / "report"))
    assert drawn, "the report draws no chart"
    assert {name: problems for name, _, problems in drawn if problems} == {}
    assert page_width(Path(written["html"])) <= PAGE


def _full_webplan_scoring() -> Any:
    """A run over every cell the paper reports: two datasets x two forms x two orders, both horizons and the three
    form tasks, both distractor strategies with the earlier actions shown, the three edge-case tasks."""
    from tasks.evaluate.run import Parsed
    from tasks.webplan.evaluation import WebplanItem
    from tasks.webplan.metrics import score_run

    metas = [("temporal", {"dataset": d, "form": f, "order": o}, "Picture 1" if o == "order1" else "Picture 2")
             for d in ("miniwob", "mind2web") for f in ("mcq", "open") for o in ("order1", "order2")]
    metas += [("future", {"horizon": h, "task_number": n}, "Yes") for h in ("short", "long") for n in (1, 2, 3)]
    metas += [("realweb", {"strategy": s}, "A") for s in ("shuffle", "semantic")]
    metas += [("edge", {"task_number": n}, "B") for n in (1, 2, 3)]
    items = [WebplanItem(key=f"k{i}", test=test, instance_key=f"k{i}", blobs={},
                         payload={"test": test, "answer": answer, "options": {}, "meta": meta})
             for i, (test, meta, answer) in enumerate(metas)]
    parsed = {item.key: Parsed({"label": item.payload["answer"] if i % 3 else "Picture 2"}, "rule")
              for i, item in enumerate(items)}
    return score_run(items, parsed, "instruct", history=True)


def test_a_webplan_report_with_every_cell_of_the_paper_fits_and_names_its_cells(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page_width: Callable[[Path], int]) -> None:
    from tasks import benchmarks
    from tasks.evaluate.report import num, write_report

    scoring = _full_webplan_scoring()
    evaluation = benchmarks.get("webplan").evaluation
    label = "a-rather-long-model-name-of-a-checkpoint-7B-instruct"
    with caught_figures(monkeypatch) as drawn:
        plots = evaluation.report_plots(scoring, tmp_path, label)
    assert [problems for _, _, problems in drawn] == [[]]
    tables = evaluation.report_tables(scoring, label)
    for words in ("mind2web MCQ, Order2", "long, Task 2: slider + 3 checkboxes", "Task 3: 3 radios + 3 textboxes",
                  "shuffle, with history", "Order gap MCQ, →0 best (order_gap_mcq)", "(form-sequence-2)"):
        assert words in tables
    assert "task1" not in tables and "/instruct" not in tables  # no cell by its key
    _, page, _ = write_report(tmp_path, title=f"{label} on webplan-test@1", tables=tables, plots=plots,
                              headline=[(k, num(v)) for k, v in scoring.headline.items()],
                              summary=[("strategy", "instruct")], problems=[])
    assert page_width(page) <= PAGE


def test_the_webplan_statistics_chart_reads_at_its_saved_size(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.webplan.stats import webplan_stats

    payloads = [{"test": i.test, "meta": i.meta, "answer": i.answer} for i in webplan_instances()]
    with caught_figures(monkeypatch) as drawn:
        webplan_stats(payloads).chart(tmp_path / "stats.png", "webplan-test@1")
    [(_, figure, problems)] = drawn
    assert problems == []
    ticks = [t.get_text() for axis in figure.axes for t in axis.get_yticklabels()]
    assert "edge: Task 1 (click-checkboxes)" in ticks and "future: horizon short, Task 1 (click-checkboxes)" in ticks
