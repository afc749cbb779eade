"""The admin tab (shown to admins only; every handler checks the role again) and the named API endpoints scripted
clients call through Gradio (the same rules as the page). Every handler goes through ``failures.guarded``.
"""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

from annotation_ui.failures import guarded
from annotation_ui.rest import summary
from annotation_ui.service import App
from annotation_ui.views import escaped


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
        conflicts = gr.Textbox(label="items waiting for adjudication", elem_id="ad-conflicts")
        with gr.Row():
            item = gr.Textbox(label="item id to adjudicate")
            verdict = gr.Textbox(label="answer: accept, reject or a correction as listed", value="accept")
            go = gr.Button("Adjudicate")
        result = gr.Markdown()
        export = gr.Button("Export decisions (JSONL)")
        file = gr.File(label="decisions")
        locked = gr.Textbox(label="locked logins (account or address: until)", elem_id="ad-locked")
        with gr.Row():
            unlock_name = gr.Textbox(label="account or address to unlock", elem_id="ad-unlock-name")
            unlock_go = gr.Button("Unlock", elem_id="ad-unlock")
    figures = [queues, people, agreement, conflicts, locked]

    def tables(request: gr.Request) -> tuple[Any, ...]:
        report = app.admin_report(request)

        def number(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.2f}"

        rows = [[q, row["done"], row["remaining"]] for q, row in report["queues"].items()]
        rates = [[name, count, "n/a" if rate is None else rate] for name, count, rate in report["throughput"]]
        kappas = [[q, number(a["percent"]), number(a["fleiss"]), a["fleiss_items"],
                   "; ".join(f"{pair}: {number(kappa)} ({n})" for pair, (n, kappa) in a["cohen"].items())]
                  for q, a in report["agreement"].items()]
        waiting = "\n".join(f"{c['item']} ({c['queue']}): " + "; ".join(f"{name}: {answer}" for name, answer
                                                                   in c["answers"].items())
                            for c in report["conflicts"])
        return rows, rates, kappas, waiting, _lockout_lines(app.lockouts(request))

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
    gr.api(guarded(admin_report), api_name="admin_report")
    go.click(guarded(adjudicate), [item, verdict], result, api_name="adjudicate")
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

