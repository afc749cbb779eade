"""The four ViC-Bench tasks by name, each imported when first used (their simulators pull in heavy packages)."""

from __future__ import annotations

from functools import cache

from schemas.registry import load_target
from tasks.vic.task import VicTask

TASK_CLASSES = {
    "maze": "tasks.vic.maze:MazeTask",
    "jigsaw": "tasks.vic.jigsaw:JigsawTask",
    "embodied": "tasks.vic.embodied:EmbodiedTask",
    "counting": "tasks.vic.counting:CountingTask",
}


@cache
def task(name: str) -> VicTask:
    try:
        target = TASK_CLASSES[name]
    except KeyError:
        raise ValueError(f"ViC-Bench has no task {name!r}: {', '.join(TASK_CLASSES)}") from None
    return load_target(target)()
