"""The web-planning tests' reference solvers (``tasks/webplan/reference_solvers.py``) play records made by the tests'
own makers: the order-blind plan checker accepts an order-swapped plan beside the right one and rejects a plan that
misses a step or borrows another task's; the busier-page heuristic orders pages that fill up and fails on pages that
empty; the same-steps comparer is right exactly on reorderings and No pairs; the state-blind goal checker sees
through distractors that contradict the instruction and not through a slider moved by another amount. A version of
order-swapping distractors only, or of slider forms only, scores lower, and ``tasks.hardness`` flags it on records
of a real (browser-free) build."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from schemas import BlobRef, Producer
from schemas.config import Settings
from storage import LocalBlobStore, open_storage
from tasks.webplan.edge import EdgeDraft, draft_edge, edge_instance
from tasks.webplan.forms import SUBMIT, Action, FormState, goal_of, run_plan
from tasks.webplan.future import draft_pair, future_instance
from tasks.webplan.instance import WebplanInstance
from tasks.webplan.paraphrase import template_words
from tasks.webplan.realweb import PlanQuestion, question, realweb_instance
from tasks.webplan.records import instance_record
from tasks.webplan.reference_solvers import (
    BUSIER_LATER,
    ORDER_BLIND,
    SAME_STEPS,
    STATE_BLIND,
    order_blind_accepts,
    plan_judgement,
    solve,
    state_blind_choice,
)
from tasks.webplan.temporal import temporal_instances
from tasks.webplan.trajectories import WebStep, WebTrajectory

CHECKBOXES = (FormState(checkboxes=(("ab", False), ("cd", False), ("ef", False), ("gh", False))),
              "Select ab, ef and click Submit.")
SLIDER = (FormState(checkboxes=(("1", False), ("2", False), ("3", False)), named_boxes=False, slider=0),
          "Select 4 with the slider, click the 2nd checkbox, then hit Submit.")
TEXTBOXES = (FormState(radios=3, textboxes=("", "", "")),
             'Check the 2nd radio button and enter the number "27" into the 3rd textbox.')
FORMS = {"click-checkboxes": CHECKBOXES, "form-sequence": SLIDER, "form-sequence-2": TEXTBOXES}


def _page(lines: int, shade: int = 255, mark: int = 0) -> bytes:
    """A page of one background shade with ``lines`` dark bars of text on it (more lines, more ink) and a logo of
    its site, a pattern of squares drawn from ``mark`` (so that two sites' pages are not near-duplicates)."""
    import random

    from PIL import Image, ImageDraw

    image = Image.new("RGB", (200, 160), (shade, shade, shade))
    draw = ImageDraw.Draw(image)
    for line in range(lines):
        draw.rectangle((10, 10 + 12 * line, 100, 16 + 12 * line), fill=(20, 20, 20))
    cells = random.Random(mark)
    for row in range(6):
        for column in range(6):
            if cells.random() < 0.5:
                draw.rectangle((140 + 8 * column, 100 + 8 * row, 147 + 8 * column, 107 + 8 * row), fill=(40, 40, 160))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _stored(instances: list[WebplanInstance], blobs: LocalBlobStore) -> list[Any]:
    """Instances as the build stores them (``records.instance_record``), their images in ``blobs``."""
    put = lambda data, role: BlobRef(sha256=blobs.put(data), role=role, media_type="image/png")  # noqa: E731
    return [instance_record(instance, Producer(task="test"), put) for instance in instances]


def _trajectory(name: str, task: str, raws: list[str], website: str = "") -> WebTrajectory:
    """A trajectory whose pages fill up: one more line of text on each."""
    steps = tuple(WebStep(action_raw=raw, screenshot=_page(i + 1), action=template_words(raw))
                  for i, raw in enumerate(raws))
    return WebTrajectory(id=name, source="jsonl", task=task, website=website or f"{name}.example", steps=steps,
                         final_screenshot=_page(len(raws) + 1))


def _templates(count: int) -> list[tuple[str, str, list[str]]]:
    """``count`` trajectories of four kinds of task (mail, shop, flights, log-in), each naming its values in the
    instruction, each kind on its own site: (id, instruction, raw steps)."""
    made = []
    for n in range(count):
        kind, value = ("mail", "shop", "fly", "login")[n % 4], f"v{n}x"
        made.append({
            "mail": (f'Find the email from Trixi{n} and reply with "{value}"',
                     [f"[div]  Email from Trixi{n} -> CLICK", "[button]  Reply -> CLICK",
                      f"[textbox]  Message -> TYPE: {value}", "[button]  Send -> CLICK"]),
            "shop": (f'Search for "lamp {value}", pick size {n} and add it to the cart',
                     [f"[textbox]  Search -> TYPE: lamp {value}", "[button]  Go -> CLICK",
                      f"[link]  Lamp {value} -> CLICK", f"[combobox]  Size -> SELECT: {n}",
                      "[button]  Add to cart -> CLICK"]),
            "fly": (f"Book a flight from Oslo{n} to Rome{n} on May {n}",
                    [f"[textbox]  From -> TYPE: Oslo{n}", f"[textbox]  Destination -> TYPE: Rome{n}",
                     f"[textbox]  Date -> TYPE: May {n}", "[button]  Search -> CLICK", "[link]  Book -> CLICK"]),
            "login": (f'Log in as "user{n}" with the password "{value}" and open the Reports{n} page',
                      [f"[textbox]  Username -> TYPE: user{n}", f"[textbox]  Password -> TYPE: {value}",
                       "[button]  Log in -> CLICK", f"[link]  Reports{n} -> CLICK"]),
        }[kind])
        made[-1] = (f"{kind}{n}", *made[-1])
    return made


def test_the_order_blind_checker_accepts_an_order_swapped_plan_and_rejects_a_missing_or_foreign_step(
        blob_store: LocalBlobStore) -> None:
    mail = _trajectory("mail", 'Find the email by Trixi and reply to them with the text "Arcu."',
                       ["[div]  Email from Trixi -> CLICK", "[button]  Reply -> CLICK",
                        "[textbox]  Message -> TYPE: Arcu.", "[button]  Send -> CLICK"])
    right = list(mail.steps)
    foreign = WebStep(action_raw="[textbox]  Search -> TYPE: desk lamp", screenshot=b"", action="Type desk lamp")
    plans = {"swapped": [right[1], right[0], *right[2:]], "missing": [right[0], right[1], right[3]],
             "foreign": [right[0], foreign, *right[2:]],
             "no email": [WebStep(action_raw="[link]  Reports -> CLICK", screenshot=b""), *right[1:]],
             "send for book": [*right[:3], WebStep(action_raw="[link]  Book -> CLICK", screenshot=b"")]}
    judged = {name: plan_judgement(mail.task, [s.action_raw for s in plan]) for name, plan in plans.items()}
    assert plan_judgement(mail.task, [s.action_raw for s in right]) == judged["swapped"] == (4, 1)  # Send names none
    assert judged["missing"] == (3, 1) and judged["foreign"] == (3, 2) and judged["no email"] == (2, 2)

    def played(*names: str) -> tuple[str, list[str], bool]:
        asked = PlanQuestion(mail, "shuffle", 0, [("right", right), *((name, plans[name]) for name in names)])
        record = _stored([realweb_instance(asked, "test")], blob_store)[0]
        return record.payload["answer"], order_blind_accepts(record.payload), solve(record, blob_store.get)

    answer, accepted, solved = played("swapped", "missing", "foreign")
    assert accepted == ["A", "B"] and answer == "A" and solved == {ORDER_BLIND: False}  # fooled by the order swap
    answer, accepted, solved = played("missing", "foreign", "no email")
    assert accepted == [answer] and solved == {ORDER_BLIND: True}
    _, accepted, solved = played("missing", "send for book", "foreign")  # a nameless step for a nameless one
    assert accepted == ["A", "C"] and solved == {ORDER_BLIND: False}


def test_order_swapping_distractors_alone_defeat_the_checker_and_other_tasks_steps_do_not() -> None:
    pool = [_trajectory(name, task, raws, website=f"{name.rstrip('0123456789')}.example")
            for name, task, raws in _templates(16)]

    def score(strategy: str) -> tuple[int, int]:
        asked = [question(t, strategy, pool, seed) for seed in range(3) for t in pool]
        payloads = [{"task": q.trajectory.task, "answer": q.answer, "meta": realweb_instance(q, "").meta}
                    for q in asked if not isinstance(q, str)]
        return sum(order_blind_accepts(p) == [p["answer"]] for p in payloads), len(payloads)

    assert score("shuffle") == (0, 48)  # every option holds the right plan's steps: it accepts all four
    solved, played = score("semantic")
    assert played == 48 and solved / played > 0.5


def test_the_busier_page_is_put_later_in_both_orders_and_forms(blob_store: LocalBlobStore) -> None:
    filling = _trajectory("form", "Fill in the form", ["[textbox]  Name -> TYPE: Ann", "[button]  Save -> CLICK"])
    records = _stored(temporal_instances(filling), blob_store)
    assert {(r.payload["meta"]["order"], r.payload["meta"]["form"]) for r in records} == {
        (order, form) for order in ("order1", "order2") for form in ("mcq", "open")}
    assert [solve(r, blob_store.get) for r in records] == [{BUSIER_LATER: True}] * 4
    emptied = WebTrajectory(id="confirm", source="jsonl", task="Send the form", website="form.example",
                            steps=filling.steps, final_screenshot=_page(0, shade=230))  # a blank "thank you" page
    assert [solve(r, blob_store.get) for r in _stored(temporal_instances(emptied), blob_store)] == [
        {BUSIER_LATER: False}] * 4
    alike = WebTrajectory(id="alike", source="jsonl", task="Wait", website="form.example",
                          steps=(WebStep(action_raw="[button]  A -> CLICK", screenshot=_page(2)),),
                          final_screenshot=_page(2, shade=200))  # as much ink: it cannot tell
    assert [solve(r, blob_store.get) for r in _stored(temporal_instances(alike), blob_store)] == [
        {BUSIER_LATER: False}] * 4


def test_same_steps_is_right_on_reorderings_and_no_pairs_and_wrong_where_the_state_must_be_worked_out(
        blob_store: LocalBlobStore) -> None:
    played = []
    for task, (start, utterance) in FORMS.items():
        for seed in range(8):
            for horizon in ("short", "long"):
                for same in (True, False):
                    pair = draft_pair(task, seed, utterance, start, horizon, same)
                    if not isinstance(pair, str):
                        played.append((pair, future_instance(pair, _page(1))))
    records = _stored([instance for _, instance in played], blob_store)
    solved = [solve(record, blob_store.get)[SAME_STEPS] for record in records]
    assert solved == [not pair.same or pair.family == "reorder" for pair, _ in played]
    families = {pair.family for pair, _ in played if pair.same}
    assert families == {"reorder", "split or merge", "cancel"} and 0.5 < sum(solved) / len(solved) < 0.9


def _edge(task: str, disturbance: list[Action], plans: list[tuple[str, list[Action]]],
          blob_store: LocalBlobStore) -> Any:
    """An edge case with the plans given (each ends with Submit), stored by the build's maker."""
    clean, utterance = FORMS[task]
    start = run_plan(clean, disturbance)
    draft = EdgeDraft(task=task, seed=0, utterance=utterance, clean=clean, disturbance=disturbance, start=start,
                      goal=goal_of(task, utterance, clean), plans=[(rule, [*plan, SUBMIT]) for rule, plan in plans])
    return _stored([edge_instance(draft, _page(1), [None] * len(plans))], blob_store)[0]


def test_the_state_blind_checker_sees_through_contradictions_and_not_through_a_slider_amount(
        blob_store: LocalBlobStore) -> None:
    ab, cd, ef, gh = (Action(op, name) for op, name in (("check", "ab"), ("uncheck", "cd"), ("check", "ef"),
                                                        ("check", "gh")))
    boxes = _edge("click-checkboxes", [Action("click", "cd")],
                  [("right", [ab, cd, ef]), ("wrong element", [gh, cd, ef]), ("misses a fix", [ab, ef]),
                   ("one action too many", [ab, cd, ef, gh])], blob_store)
    assert state_blind_choice(boxes.payload) == ["A"] and solve(boxes, blob_store.get) == {STATE_BLIND: True}
    box_2 = Action("check", "2")
    slider = _edge("form-sequence", [Action("slider", value=1)],
                   [("wrong amount", [Action("slider", value=4), box_2]), ("right", [Action("slider", value=3), box_2]),
                    ("wrong element", [Action("slider", value=3), Action("check", "3")]),
                    ("misses a fix", [box_2])], blob_store)
    assert state_blind_choice(slider.payload) == ["A", "B"] and solve(slider, blob_store.get) == {STATE_BLIND: False}


def test_a_version_of_slider_forms_is_harder_for_the_state_blind_checker(blob_store: LocalBlobStore) -> None:
    def score(task: str) -> float:
        clean, utterance = FORMS[task]
        drafts = [draft_edge(task, seed, utterance, clean, goal_of(task, utterance, clean)) for seed in range(30)]
        made = [edge_instance(d, _page(1), [None] * len(d.plans)) for d in drafts if not isinstance(d, str)]
        return sum(solve(r, blob_store.get)[STATE_BLIND] for r in _stored(made, blob_store)) / len(made)

    assert score("click-checkboxes") > 0.9 and score("form-sequence-2") > 0.7 and score("form-sequence") < 0.4


def test_a_record_is_played_by_its_own_test_solver_or_left_out(blob_store: LocalBlobStore) -> None:
    bare = WebplanInstance(test="realweb", key="r", task="Buy a ticket", answer="A",
                           options={k: f"1. plan {k}." for k in "ABCD"}, images={"start": _page(1)},
                           meta={"strategy": "shuffle"})  # no raw steps per option: nothing to judge
    unread = WebplanInstance(test="edge", key="e", task="Do something else.", answer="A", images={"start": _page(1)},
                             meta={"form_task": "click-checkboxes", "start_state": CHECKBOXES[0].as_dict(),
                                   "plans": [{"letter": "A", "actions": [["submit", "", None]]}]})
    assert [solve(r, blob_store.get) for r in _stored([bare, unread], blob_store)] == [{}, {}]


def _jsonl_source(folder: Path) -> Path:
    """Twenty trajectories of the four kinds of task in our JSONL format, each page busier than the one before."""
    (folder / "frames").mkdir(parents=True)
    rows = []
    for number, (name, task, raws) in enumerate(_templates(20)):
        for i in range(len(raws) + 1):
            (folder / "frames" / f"{name}-{i}.png").write_bytes(_page(i + 1, mark=number))
        rows.append(json.dumps({"id": name, "task": task, "website": f"{name.rstrip('0123456789')}.example",
                                "steps": [{"screenshot": f"frames/{name}-{i}.png", "action_raw": raw}
                                          for i, raw in enumerate(raws)],
                                "final_screenshot": f"frames/{name}-{len(raws)}.png"}))
    (folder / "trajectories.jsonl").write_text("\n".join(rows) + "\n")
    return folder


def test_the_plugin_solvers_through_the_hardness_report_flag_an_order_swap_only_version(
        settings: Settings, tmp_path: Path) -> None:
    from schemas.registry import load_target
    from tasks import benchmarks
    from tasks.benchmark import BuildContext
    from tasks.hardness import hardness_report
    from tasks.webplan.options import WebplanBuildOptions
    from tasks.webplan.stages import generate_stage, trajectories_stage

    def context(**options: Any) -> BuildContext:
        return BuildContext(benchmark="webplan", run_id=None, options=WebplanBuildOptions(**options))

    trajectories_stage(settings, context(trajectories_dir=str(_jsonl_source(tmp_path / "web")),
                                         trajectories_format="jsonl"))
    assert generate_stage(settings, context(tests=("temporal", "realweb")))["instances"] == 20 * 4 + 20 * 2
    storage = open_storage(settings)
    records = storage.catalog.find_records(kind="webplan_instance")
    temporal = [r for r in records if r.payload["test"] == "temporal"]
    by_strategy = {s: [r for r in records if r.payload["meta"].get("strategy") == s] for s in ("shuffle", "semantic")}
    plugin = benchmarks.get("webplan")
    report = hardness_report(temporal + by_strategy["semantic"], temporal + by_strategy["shuffle"],
                             load_target(plugin.difficulty), load_target(plugin.solvers), storage.blobs.get)
    rows = {row["solver"]: row for row in report["solvers"]}
    assert set(rows) == {ORDER_BLIND, BUSIER_LATER} and report["solvers differ"] == [ORDER_BLIND]
    assert rows[ORDER_BLIND]["new"].startswith("0.0% ") and rows[ORDER_BLIND]["new"].endswith(" of 20")
    assert rows[BUSIER_LATER]["earlier"] == rows[BUSIER_LATER]["new"] and rows[BUSIER_LATER]["new"].startswith("100.0%")
