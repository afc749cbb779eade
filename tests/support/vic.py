"""ViC-Bench instances as the task tests read them: the ground truth of a jigsaw or a crowd, and an instance with its
meta changed."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

JIGSAW_TRUTH = {1: "C", 2: "A", 3: "F", 4: "B", 5: "E", 6: "D"}  # patch -> region, as a test writes one


def jigsaw_truth(instance: Any) -> dict[int, str]:
    return {int(p): r for p, r in instance.meta["mapping"].items()}


def counting_truth(instance: Any) -> dict[str, int]:
    return dict(instance.meta["counts"])


def with_meta(instance: Any, change: Callable[[dict[str, Any]], Any]) -> Any:
    meta = copy.deepcopy(instance.meta)
    change(meta)
    return dataclasses.replace(instance, meta=meta)
