"""The ``benchwright`` command's entry point, apart from the CLI module.

A build's frame workers are spawned processes, and a spawned process first imports the script its parent was
started from (multiprocessing does, for functions defined there). With the CLI module itself as the entry, each
worker paid for typer, rich and the settings machinery (about 0.15 s) before its first episode; this module costs
nothing to import.
"""

from __future__ import annotations

from typing import Any


def main() -> Any:
    from flows.cli import app

    return app()
