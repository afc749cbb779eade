"""What the warm process (``flows.warm_process``) does once, so that the commands it forks do not each do it."""

from __future__ import annotations

import subprocess
import sys


def test_pydantic_models_left_to_their_first_use_are_built_before_commands_fork():
    """A model naming a class defined after it has no validator until its first use, which every forked command
    would pay again; the warm-up builds it. One it cannot build (a name never defined) is left to its first
    use and stops nothing."""
    probe = ("from typing import Generic, TypeVar\n"
             "from pydantic import BaseModel\n"
             "from flows.warm_process import _complete_deferred_models\n"
             "class Early(BaseModel):\n"
             "    later: 'Later | None' = None\n"
             "class Later(BaseModel):\n"
             "    name: str = 'x'\n"
             "T = TypeVar('T')\n"
             "class Box(BaseModel, Generic[T]):\n"
             "    item: 'T | Missing'\n"
             "before = Early.__pydantic_complete__\n"
             "_complete_deferred_models()\n"
             "print(before, Early.__pydantic_complete__, Early(later={'name': 'y'}).later.name)")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert shown == ["False", "True", "y"]
