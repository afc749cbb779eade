"""The web-planning build stages over the catalog: trajectories imported with bad rows quarantined and nothing
stored twice, actions put in plain words by templates or by the chat role (a local OpenAI-compatible server), and
temporal and real-web instances stored as candidates with a verification item each, linked to their trajectory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemas import Status
from schemas.config import BlobSettings, CatalogSettings, ExportSettings, ModelRole, Settings
from storage import open_storage
from tasks.benchmark import BuildContext
from tasks.webplan.options import WebplanBuildOptions
from tasks.webplan.stages import generate_stage, trajectories_stage
from tests.support.chat_server import ScriptedChatServer
from tests.support.images import solid_png as png


def source(folder: Path) -> Path:
    """Three trajectories (6, 5 and 2 actions) and two bad rows in our JSONL format."""
    (folder / "frames").mkdir(parents=True)
    rows = []
    for name, length in (("shop", 6), ("mail", 5), ("short", 2)):
        steps = []
        for i in range(length):
            (folder / "frames" / f"{name}{i}.png").write_bytes(png(10 * i + len(name)))
            steps.append({"screenshot": f"frames/{name}{i}.png", "action_raw": f"[button]  {name} step {i} -> CLICK"})
        rows.append(json.dumps({"id": name, "task": f"Do the {name} task", "website": f"{name}.example",
                                "steps": steps}))
    rows += [json.dumps({"id": "escape", "task": "t", "steps": [{"screenshot": "/etc/passwd", "action": "x"}]}),
             '{"id": "cut"']
    (folder / "trajectories.jsonl").write_text("\n".join(rows) + "\n")
    return folder


def settings_for(tmp_path: Path, **models: ModelRole) -> Settings:
    return Settings(catalog=CatalogSettings(path=tmp_path / "catalog.duckdb"), models=models,
                    blobs=BlobSettings(uri=f"file://{tmp_path}/blobs"), export=ExportSettings(folder=tmp_path / "x"))


def context(options: dict[str, Any]) -> BuildContext:
    return BuildContext(benchmark="webplan", run_id=None, options=WebplanBuildOptions(**options))


def test_imported_trajectories_are_stored_once_and_bad_rows_quarantined(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    options = {"trajectories_dir": str(source(tmp_path / "src")), "trajectories_format": "jsonl"}
    counts = trajectories_stage(settings, context(options))
    assert counts | {"new": 0} == {"trajectories": 3, "records": 3, "new": 0, "quarantined": 2, "superseded": 0,
                                   "paraphrased by": "template"}
    catalog = open_storage(settings).catalog
    stored = catalog.find_records(kind="web_trajectory")
    shop = next(r for r in stored if r.payload["trajectory_id"] == "shop")
    assert shop.payload["actions"][0] == "Click on the shop step 0 button" and len(shop.blobs) == 6
    reasons = sorted(q.status_reason for q in catalog.find_records(kind="quarantined_input"))
    assert any("outside the source root" in r for r in reasons) and any("not valid JSON" in r for r in reasons)
    assert trajectories_stage(settings, context(options))["new"] == 0  # a rerun stores nothing twice

    made = generate_stage(settings, context({"tests": ("temporal", "realweb")}))
    assert made["temporal"]["instances"] == 12  # four questions from each of the three trajectories
    assert made["realweb"]["instances"] == 4  # a shuffle and a semantic question from each of the two long ones
    assert made["realweb"]["quarantined"] == 1  # the 2-action trajectory, named once
    instances = catalog.find_records(kind="webplan_instance")
    assert {r.status for r in instances} == {Status.CANDIDATE}
    assert {r.parents[0] for r in instances} <= {r.id for r in stored}
    items = catalog.find_records(kind="review_item")
    assert sorted(i.payload["target_id"] for i in items) == sorted(r.id for r in instances)
    realweb = [r for r in instances if r.payload["test"] == "realweb"]
    for record in realweb:
        right = record.payload["options"][record.payload["answer"]]
        trajectory = next(t for t in stored if t.id == record.parents[0])
        assert right == " ".join(f"{i}. {a}." for i, a in enumerate(
            trajectory.payload["actions"][record.payload["meta"]["step"]:], 1))
    again = generate_stage(settings, context({"tests": ("temporal", "realweb")}))
    assert again["new"] == 0 and again["instances"] == 0  # nothing made twice: what was made is kept
    assert again["temporal"]["kept from earlier builds"] == 3 and again["realweb"]["kept from earlier builds"] == 4
    assert again["nothing new"].startswith("the 7 instance(s) these seeds and counts make were made by earlier")
    rebuilt = generate_stage(settings, context({"tests": ("temporal", "realweb"), "rebuild": True}))
    assert rebuilt["instances"] == 16 and rebuilt["new"] == 0 and rebuilt["superseded"] == 0  # the same again


def test_the_chat_role_paraphrases_and_an_unusable_answer_falls_back_to_the_template(tmp_path: Path) -> None:
    def answer(body: dict[str, Any]) -> str:
        asked = body["messages"][-1]["content"]
        text = asked if isinstance(asked, str) else " ".join(p.get("text", "") for p in asked)
        raw = text.split("Action: ")[-1]
        return "Press it\nthen more" if "step 1" in raw else f"Press the {raw.split(']')[1].split('->')[0].strip()}"

    with ScriptedChatServer() as server:
        server.behaviours.clear()
        server.behaviours.append(("call", answer))
        chat = ModelRole(backend="openai", model="writer", params={"base_url": server.url, "backoff_s": 0.01})
        settings = settings_for(tmp_path, chat=chat)
        counts = trajectories_stage(settings, context({"trajectories_dir": str(source(tmp_path / "src"))}))
        asked = len(server.requests)
    assert counts["paraphrased by"] == "chat openai writer"
    catalog = open_storage(settings).catalog
    shop = next(r for r in catalog.find_records(kind="web_trajectory") if r.payload["trajectory_id"] == "shop")
    assert shop.payload["actions"][0] == "Press the shop step 0"
    assert shop.payload["actions"][1] == "Click on the shop step 1 button"  # two lines: the template's instead
    assert shop.producer.params["model"] == "writer" and asked == 13


def test_a_changed_trajectory_supersedes_the_old_one_and_what_was_cut_from_it(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    folder = source(tmp_path / "src")
    options = {"trajectories_dir": str(folder)}
    trajectories_stage(settings, context(options))
    generate_stage(settings, context({"tests": ("temporal",)}))
    catalog = open_storage(settings).catalog
    before = {r.payload["trajectory_id"]: r.id for r in catalog.find_records(kind="web_trajectory")}
    (folder / "frames" / "mail0.png").write_bytes(png(250))  # the source's first mail screenshot was redone
    assert trajectories_stage(settings, context(options))["superseded"] == 1 + 4 + 4  # it, 4 questions, 4 items
    old = catalog.get_record(before["mail"])
    assert old.status == Status.SUPERSEDED and catalog.get_record(before["shop"]).status == Status.ACCEPTED
    made = generate_stage(settings, context({"tests": ("temporal",)}))
    assert made["temporal"]["new"] == 8 and made["superseded"] == 0  # the mail questions again, from the new one
    current = [r for r in catalog.find_records(kind="webplan_instance") if r.status == Status.CANDIDATE]
    assert len(current) == 12 and before["mail"] not in {p for r in current for p in r.parents}


def test_a_build_of_tests_that_need_no_trajectories_records_none(tmp_path: Path) -> None:
    """Edge cases and future states are made on MiniWob++ pages directly: building only them records no expert
    episode (minutes of browser work and ~90 MB of screenshots nothing reads) and says why."""
    settings = settings_for(tmp_path)
    counts = trajectories_stage(settings, context({"tests": ("edge", "future")}))
    assert counts["records"] == 0 and counts["skipped"] == (
        "none recorded: the tests built (edge, future) use no expert trajectories (temporal and realweb do)")
    assert open_storage(settings).catalog.find_records(kind="web_trajectory") == []


def test_a_build_on_two_browsers_stores_what_one_browser_stores(tmp_path: Path) -> None:
    """Recording, replays, edge cases and future-state pairs carried out on a pool of two browsers make the same
    records, in the same order, as on one: each episode's job depends on its seed alone, taken in seed order."""
    from schemas.config import load_settings

    stored = []
    for browsers in (1, 2):
        settings = settings_for(tmp_path / str(browsers)).model_copy(
            update={"webplan": load_settings().webplan.model_copy(update={"browsers": browsers})})
        options = {"count": 1, "episodes": 1}
        trajectories_stage(settings, context(options))
        generate_stage(settings, context(options))
        catalog = open_storage(settings).catalog
        stored.append({kind: [(r.id, r.status, r.payload) for r in catalog.find_records(kind=kind)]
                       for kind in ("web_trajectory", "webplan_instance", "review_item", "quarantined_input")})
    assert stored[0] == stored[1]
    assert {r[2]["test"] for r in stored[0]["webplan_instance"]} == {"temporal", "future", "realweb", "edge"}


def test_a_share_of_a_spread_build_draws_its_cells_alone(tmp_path: Path) -> None:
    """With [compute] task_runner dask (or ray) the generate stage's cells are shared out among task runs, each on
    browsers of its own: a share draws its cells and nothing else."""
    from dataclasses import replace

    from tasks.webplan.stages import generate_units

    settings = settings_for(tmp_path)
    whole = context({"tests": ("edge", "future"), "count": 1})
    units = generate_units(settings, whole)
    assert units[:3] == ["edge/click-checkboxes", "edge/form-sequence", "edge/form-sequence-2"] and len(units) == 9
    made = generate_stage(settings, replace(whole, share=("edge/form-sequence", "future/click-checkboxes/long")))
    instances = open_storage(settings).catalog.find_records(kind="webplan_instance")
    assert {(r.payload["test"], r.payload["meta"]["form_task"]) for r in instances} == {
        ("edge", "form-sequence"), ("future", "click-checkboxes")}
    assert made["edge"]["instances"] == made["future"]["instances"] == 1


def test_real_web_questions_stop_at_the_count_per_strategy_and_a_larger_count_adds_the_rest(tmp_path: Path) -> None:
    from tasks.webplan.settings import WebplanSettings

    settings = settings_for(tmp_path)
    trajectories_stage(settings, context({"trajectories_dir": str(source(tmp_path / "src"))}))
    capped = settings.model_copy(update={"webplan": WebplanSettings(realweb_count=1)})
    made = generate_stage(capped, context({"tests": ("realweb",)}))
    assert made["realweb"]["instances"] == 2 and made["realweb"]["shuffle"] == made["realweb"]["semantic"] == 1
    stored = open_storage(settings).catalog.find_records(kind="webplan_instance")
    assert sorted(r.payload["meta"]["strategy"] for r in stored) == ["semantic", "shuffle"]
    again = generate_stage(capped, context({"tests": ("realweb",)}))
    assert again["realweb"]["instances"] == 0  # the count is met by what was made before
    more = generate_stage(settings, context({"tests": ("realweb",)}))  # the paper's 435: every usable trajectory
    assert more["realweb"]["instances"] == 2 and more["realweb"]["kept from earlier builds"] == 2
    assert more["realweb"]["short"].startswith("shuffle 433 fewer than its count: no usable trajectory left")
    assert "short" not in made["realweb"]
    assert {r.parents[0] for r in open_storage(settings).catalog.find_records(kind="webplan_instance")} == {
        r.id for r in open_storage(settings).catalog.find_records(kind="web_trajectory")
        if len(r.payload["actions"]) >= 4}
