"""The project's code as a kept server's commands run it: copied into a folder of the test's, so that the test
may edit it (the warm process watches its code) and an edit of the checkout meanwhile changes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def code_copy(folder: Path) -> Path:
    """The project's packages copied into ``folder``; the folder."""
    for package in ("flows", "schemas", "storage", "tasks", "annotation_ui"):
        shutil.copytree(REPO / package, folder / package, ignore=shutil.ignore_patterns("__pycache__"))
    return folder
