"""The [vic] section of benchwright.toml."""

from __future__ import annotations

from pydantic import Field, field_validator

from schemas.config import Section, known
from tasks.vic.task import MAX_TURNS, TASKS


class VicSettings(Section):
    # the paper's 250 unique instances per task; `benchwright build vic --count N` and the main job's sample (a
    # few per task) override it
    instances_per_task: int = Field(250, ge=1)
    tasks: tuple[str, ...] = TASKS
    seed: int = 0
    max_turns: int = Field(MAX_TURNS, ge=1)  # the Stage-3 loop's limit ("maximum attempts 30")
    # Stage 3 shows the model the initial image and only the latest intermediate visual state ("latest"), or every
    # state it produced ("all"); the paper does not say which stays in context
    history_images: str = "latest"

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, tasks: tuple[str, ...]) -> tuple[str, ...]:
        return known(tasks, TASKS, "ViC-Bench task(s)")

    @field_validator("history_images")
    @classmethod
    def _history(cls, value: str) -> str:
        if value not in ("latest", "all"):
            raise ValueError(f"history_images is latest or all, got {value!r}")
        return value
