"""What the ViC-Bench task tests share: the task a test module names (``TASK``) and its instances (``DRAW``: count,
seed and generator options), made once per module."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="module")
def task(request: pytest.FixtureRequest) -> Any:
    from tasks.vic.suite import task as made

    return made(request.module.TASK)


@pytest.fixture(scope="module")
def instances(task: Any, request: pytest.FixtureRequest) -> list[Any]:
    count, seed, options = request.module.DRAW
    return task.generate(count, seed, options)
