"""The ``benchwright`` command's entry point, apart from the CLI module.

A build's frame workers are forked from a fork server, which first imports the script its parent was started from
(multiprocessing does, for functions defined there; a spawned worker did the same). With the CLI module itself as
the entry, that paid for typer, rich and the settings machinery (about 0.15 s) before the first episode; this module
costs nothing to import. It also hands the command to the warm process ``benchwright server start`` keeps
(``flows.warm``), before anything heavy is imported.
"""

from __future__ import annotations

from typing import Any


def main() -> Any:
    from flows.warm import warm_or_here

    return warm_or_here(_here)


def _here() -> Any:
    from flows.cli import app
    from flows.last_resort import reported

    return reported(app)
