"""EXPLORE-Bench in the harness formats (tasks/exporting): a configuration per subset (Short, Medium, Long), the
``final-scene`` prompt (the initial image and every action), the annotated final scene as the answer. Its metrics
compare the description with the scene through a scorer model, which lmms-eval cannot call per sample: a harness's
output is scored by ``benchwright evaluate --predictions``."""

from __future__ import annotations

import json
from typing import Any

from tasks.benchmark import HarnessFields, HarnessMapping
from tasks.explore.evaluation import ExploreItem
from tasks.explore.export import export_name


def explore_fields(item: ExploreItem, strategy: str) -> HarnessFields:
    scene = [{"category": o.category, "description": o.description, "relation": list(o.relation),
              **({"key_state": o.key_state} if o.key_state else {})} for o in item.objects]
    return HarnessFields(config=item.subset, category=item.subset, answer=json.dumps(scene, ensure_ascii=False),
                         extra={"clip_id": item.clip_id, "id": export_name(item.clip_id),
                                "actions": len(item.actions)})


def explore_source(record: Any) -> str | None:
    """An instance names the videos its clip was cut from (a scene is an annotation of one instance)."""
    return record.payload.get("source") if record.kind == "explore_instance" else None


HARNESS = HarnessMapping(strategies=("final-scene",), fields=explore_fields, source=explore_source)
