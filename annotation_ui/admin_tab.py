"""The admin tab (shown to admins only; every handler checks the role again) and the named API endpoints scripted
clients call through Gradio (the same rules as the page). Every handler goes through ``failures.guarded``.

Adjudication: each item whose answers conflict is shown as its queue shows it, every annotator's answer beside the
others (a correction as its corrected table, the cells it changed marked), and a button per choice: accept, reject,
or one annotator's correction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from annotation_ui.drawing import drawn
from annotation_ui.failures import guarded
from annotation_ui.rest import summary
from annotation_ui.service import App, view_of
from annotation_ui.views import escaped
from tasks.review_screen import table_html

MAX_CORRECTIONS = 4  # buttons for distinct corrections of one item (an overlap of up to four annotators)


@dataclass
class _Adjudication:
    """The adjudication view's components; ``choices`` holds the answer each correction button stands for."""

    pick: Any
    text: Any
    pictures: Any
    answers: Any
    choices: Any
    accept: Any
    reject: Any
    corrections: list[Any]
    said: Any

    @property
    def outputs(self) -> list[Any]:
        return [self.pick, self.text, self.pictures, self.answers, self.choices, self.accept, self.reject,
                *self.corrections]


def _adjudication_layout() -> _Adjudication:
    with gr.Column(elem_id="ad-adjudication"):
        gr.Markdown("### Items waiting for adjudication")
        pick = gr.Dropdown(label="item in conflict (oldest first)", choices=[], elem_id="ad-conflict")
        text = gr.HTML(elem_id="ad-item")
        pictures = gr.HTML(elem_id="ad-images")
        answers = gr.HTML(elem_id="ad-answers")
        # no id ends in -accept or -reject: the page's y and n keys press those
        with gr.Row():
            accept = gr.Button("Accept the item", variant="primary", elem_id="ad-accept-choice", visible=False)
            reject = gr.Button("Reject the item", elem_id="ad-reject-choice", visible=False)
            corrections = [gr.Button(visible=False, elem_id=f"ad-correction-{i}") for i in range(MAX_CORRECTIONS)]
        said = gr.Markdown(elem_id="ad-adjudicated")
    return _Adjudication(pick, text, pictures, answers, gr.State([]), accept, reject, corrections, said)


def _answers_html(data: dict[str, Any], answers: dict[str, dict[str, Any]]) -> str:
    """Every annotator's answer side by side; a correction as the table it makes (changed cells and new rows marked,
    removed rows named) when the queue's view has a table, else as JSON; the table as given first."""
    view = view_of(data["queue"])
    spec = view.table if view is not None else None
    given = spec.rows(data) if spec is not None else []
    columns = [f'<div><h4>as given</h4>{table_html(spec.columns, given)}</div>'] if spec is not None else []
    for name, answer in answers.items():
        correction = answer["correction"]
        if correction and spec is not None:
            rows = spec.rows({**data, "target": {**data["target"], **correction}})
            gone = sorted({str(r[0]) for r in given} - {str(r[0]) for r in rows})
            body = table_html(spec.columns, rows, given) + (f"<p>rows removed: {escaped(', '.join(gone))}</p>"
                                                            if gone else "")
        elif correction:
            body = f'<pre class="bw-prompt">{escaped(json.dumps(correction, indent=1, ensure_ascii=False))}</pre>'
        else:
            body = ""
        columns.append(f'<div><h4>{escaped(name)}: {escaped(answer["verdict"])}</h4>{body}</div>')
    return f'<div class="bw-answers">{"".join(columns)}</div>'


def _conflict(app: App, request: Any, chosen: str | None) -> tuple[Any, ...]:
    """The adjudication view's outputs for the conflict ``chosen`` (the oldest when it is none of them)."""
    waiting = app.admin_report(request)["conflicts"]
    ids = [c["item"] for c in waiting]
    chosen = chosen if chosen in ids else (ids[0] if ids else None)
    labels = [(f"{c['item'][:12]} ({c['queue']}): " + "; ".join(f"{name} {answer.split(':')[0]}" for name, answer
                                                                in c["answers"].items()), c["item"])
              for c in waiting]
    pick = gr.Dropdown(choices=labels, value=chosen)
    if chosen is None:
        return (pick, "<p>No item waits for adjudication.</p>", "", "", [], gr.Button(visible=False),
                gr.Button(visible=False), *[gr.Button(visible=False)] * MAX_CORRECTIONS)
    (found,) = app.conflict_views(request, chosen)
    data, answers = found["view"], found["answers"]
    text, pictures, stored = drawn(app, data)
    if stored is not None:
        text += f'<pre class="bw-prompt">{escaped(json.dumps(stored, indent=1, ensure_ascii=False))}</pre>'
    corrections: dict[str, list[str]] = {}
    for name, answer in answers.items():
        if answer["correction"]:
            corrections.setdefault(answer["answer"], []).append(name)
    choices = list(corrections)[:MAX_CORRECTIONS]
    buttons = [gr.Button(f"Choose {' and '.join(corrections[c])}'s correction", visible=True) for c in choices]
    buttons += [gr.Button(visible=False)] * (MAX_CORRECTIONS - len(buttons))
    return (pick, text, pictures, _answers_html(data, answers), choices, gr.Button(visible=True),
            gr.Button(visible=True), *buttons)


def _wire_adjudication(app: App, view: _Adjudication) -> None:
    def chosen(item_id: str | None, request: gr.Request) -> tuple[Any, ...]:
        return _conflict(app, request, item_id)

    def settle(answer: str | int) -> Any:
        def handler(item_id: str | None, choices: list[str], request: gr.Request) -> tuple[Any, ...]:
            picked = choices[answer] if isinstance(answer, int) else answer
            if not item_id or not picked:
                return *_conflict(app, request, item_id), "**Not adjudicated:** choose an item first."
            reason = app.adjudicate(item_id, picked, request)
            return *_conflict(app, request, None), f"Adjudicated item `{item_id[:12]}`: {escaped(reason)}."
        return guarded(handler)

    view.pick.input(guarded(chosen), view.pick, view.outputs, api_visibility="private")
    outputs = [*view.outputs, view.said]
    choices: list[tuple[Any, str | int]] = [(view.accept, "accept"), (view.reject, "reject"),
                                            *((button, i) for i, button in enumerate(view.corrections))]
    for button, answer in choices:
        button.click(settle(answer), [view.pick, view.choices], outputs, api_visibility="private")


def admin_tab(app: App, blocks: Any) -> None:
    """Shown to admins only, filled when the page opens; every handler checks the role again."""
    with gr.Tab("Admin", visible=False) as tab:
        refresh = gr.Button("Refresh", elem_id="ad-refresh")
        queues = gr.Dataframe(headers=["queue", "done", "remaining"], label="queues", elem_id="ad-queues")
        people = gr.Dataframe(headers=["annotator", "answers", "answers per hour"], label="throughput",
                              elem_id="ad-people")
        agreement = gr.Dataframe(headers=["queue", "percent agreement", "Fleiss kappa", "items",
                                          "Cohen kappa per pair (shared items)"], label="agreement",
                                 elem_id="ad-agreement")
        adjudication = _adjudication_layout()
        export = gr.Button("Export decisions (JSONL)")
        file = gr.File(label="decisions")
        locked = gr.Textbox(label="locked logins (account or address: until)", elem_id="ad-locked")
        with gr.Row():
            unlock_name = gr.Textbox(label="account or address to unlock", elem_id="ad-unlock-name")
            unlock_go = gr.Button("Unlock", elem_id="ad-unlock")
        result = gr.Markdown()
    figures = [queues, people, agreement, locked, *adjudication.outputs]

    def tables(request: gr.Request) -> tuple[Any, ...]:
        report = app.admin_report(request)

        def number(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.2f}"

        rows = [[q, row["done"], row["remaining"]] for q, row in report["queues"].items()]
        rates = [[name, count, "n/a" if rate is None else rate] for name, count, rate in report["throughput"]]
        kappas = [[q, "n/a" if a["percent"] is None else f"{a['percent']:.0%}", number(a["fleiss"]), a["fleiss_items"],
                   "; ".join(f"{pair}: {number(kappa)} ({n})" for pair, (n, kappa) in a["cohen"].items())]
                  for q, a in report["agreement"].items()]
        return rows, rates, kappas, _lockout_lines(app.lockouts(request)), *_conflict(app, request, None)

    def opened(request: gr.Request) -> tuple[Any, ...]:
        if app.accounts.role(app.user(request)) != "admin":
            return gr.Tab(visible=False), *[gr.skip()] * len(figures)
        return gr.Tab(visible=True), *tables(request)

    def admin_report(request: gr.Request) -> dict[str, Any]:
        return app.admin_report(request)

    def export_decisions(request: gr.Request) -> str:
        return app.export(request)

    def adjudicate(item_id: str, verdict: str, request: gr.Request) -> str:
        return escaped(app.adjudicate(item_id, verdict, request))

    def unlock(name: str, request: gr.Request) -> tuple[str, str]:
        return app.unlock(name, request), _lockout_lines(app.lockouts(request))

    blocks.load(guarded(opened), None, [tab, *figures], api_visibility="private")
    refresh.click(guarded(tables), None, figures, api_visibility="private")
    _wire_adjudication(app, adjudication)
    gr.api(guarded(admin_report), api_name="admin_report")
    gr.api(guarded(adjudicate), api_name="adjudicate")
    export.click(guarded(export_decisions), None, file, api_name="export_decisions")
    unlock_go.click(guarded(unlock), unlock_name, [result, locked], api_name="unlock")


def _lockout_lines(lockouts: list[dict[str, Any]]) -> str:
    return "\n".join(f"{x['key']}: until {x['until']} ({x['failures']} failures)" for x in lockouts) or "none"


def api(app: App) -> None:
    """The HTTP API for scripted clients (the same rules as the page)."""
    def take(queue: str, request: gr.Request) -> str:
        return json.dumps(summary(app.take(queue, request)) or {})

    def answer(item_id: str, verdict: str, note: str, request: gr.Request) -> str:
        return app.answer(item_id, verdict, request, note=note, shown={"via": "api"})

    def answer_next(item_id: str, verdict: str, note: str, queue: str, request: gr.Request) -> str:
        """The answer and the next item of ``queue`` in one request: what a page does after each answer, so a
        scripted client waits for one round trip per item, not two."""
        decision, following = app.answer_next(item_id, verdict, request, queue=queue, note=note, shown={"via": "api"})
        return json.dumps({"decision": decision, "next": summary(following)})

    def undo(request: gr.Request) -> str:
        return app.undo(request) or ""

    gr.api(guarded(take), api_name="take")
    gr.api(guarded(answer), api_name="answer")
    gr.api(guarded(answer_next), api_name="answer_next")
    gr.api(guarded(undo), api_name="undo")
