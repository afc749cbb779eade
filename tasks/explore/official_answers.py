"""Answers as the official EXPLORE-Bench harness writes them, read as its evaluation reads them.

Its ``results.json`` is a JSON list of ``{start_frame, response, success}`` (its per-chunk ``results_<k>.json`` are
JSONL with the same keys); its scored file one JSON object ``{start_frame: description or [descriptions]}``, which
the shared reader takes as keyed answers. A raw response is cleaned as the harness cleans it before scoring, and the
last description of a stepwise strategy's list is the final scene.
"""

from __future__ import annotations

from typing import Any

# What the official harness strips from a raw response before scoring (infer_utils.remove_tags), every closing
# brace included, as it does.
_OFFICIAL_TAGS = ("<|begin_of_box|>", "<|end_of_box|>", "<answer>", "</answer>", "\\boxed{", "}")


def official_clean(response: Any) -> Any:
    """A raw response of the official harness as its convert_list_to_dict leaves it: the text after the first
    ``</think>``, the tags above removed; a list of responses (stepwise strategies) element by element."""
    if isinstance(response, list):
        return [official_clean(r) for r in response]
    if not isinstance(response, str):
        return response
    _, found, after = response.partition("</think>")
    text = after.lstrip() if found else response
    for tag in _OFFICIAL_TAGS:
        text = text.replace(tag, "")
    return text


def official_answer(row: dict[str, Any]) -> tuple[str, Any] | None:
    """(start_frame, final scene) of a row of the harness's results; None for a row of another shape."""
    if "start_frame" not in row or "response" not in row:
        return None
    cleaned = official_clean(row["response"])
    return str(row["start_frame"]), cleaned[-1] if isinstance(cleaned, list) and cleaned else cleaned
