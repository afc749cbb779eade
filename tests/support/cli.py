"""The CLI in-process: a command run as a user types it, the CLI's consoles at a fixed width, and a project folder
holding a configuration and a small catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from flows.cli import app, terminal
from schemas import Status
from storage import Catalog, LocalBlobStore, Storage
from tests.support.catalog import demo_with_frame, item_record

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def pin_console_width(monkeypatch: pytest.MonkeyPatch, width: int = 200) -> None:
    """The CLI's consoles at a fixed width. Rich wraps at the terminal's width, or at COLUMNS as it was when
    flows.cli was first imported (a COLUMNS given to CliRunner later is not read), so without this what a test
    reads depends on the terminal the suite runs in."""
    monkeypatch.setattr(terminal, "console", Console(width=width))
    monkeypatch.setattr(terminal, "err", Console(width=width, stderr=True))


def unwrapped(output: str) -> str:
    """What a command printed as one line of words: Typer's error panel is drawn at the terminal's width (its own
    console, not the CLI's), so a message with a long path in it wraps at a place that depends on the path."""
    return " ".join(output.replace("│", " ").split())


def make_project(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Storage, Any, Any]:
    """``folder`` as the working directory, with a benchwright.toml (a chat model with a secret key) and a catalog
    of two demos with a frame each, the first accepted, and an item derived from it; (storage, the first demo, the
    item)."""
    monkeypatch.chdir(folder)
    monkeypatch.delenv("BENCHWRIGHT_CONFIG", raising=False)
    (folder / "benchwright.toml").write_text(
        '[catalog]\npath = "state/cat.duckdb"\n[blobs]\nuri = "file://state/blobs"\n'
        '[models.chat]\nbackend = "openai"\nmodel = "qwen"\napi_key = "sk-live-123"\n')
    storage = Storage(Catalog(folder / "state" / "cat.duckdb"), LocalBlobStore(folder / "state" / "blobs"))
    root = demo_with_frame(storage, 0)
    child = item_record(1, parents=(root.id,))
    storage.catalog.put_records([root, child, demo_with_frame(storage, 1)])
    storage.catalog.set_status([root.id], Status.ACCEPTED, actor="ann")
    return storage, root, child
