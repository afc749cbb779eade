"""What a project is set up with: ``benchwright config show``, ``models list``/``models check`` (the backend of each
model role) and ``sample-world`` (the bundled sample sources)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

import flows.cli.listing as listing
import flows.cli.terminal as terminal


def config_show() -> None:
    """Print the effective configuration (secrets masked) and where it came from."""
    from schemas.config import config_source, masked

    settings = terminal.settings()
    terminal.console.print(f"# from {config_source()} and BENCHWRIGHT_* environment variables")
    import tomli_w

    terminal.console.print(tomli_w.dumps(_without_none(masked(settings))), markup=False, highlight=False)


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value


def models_list(as_json: listing.JsonOption = False) -> None:
    """Each role with its backend, model and parameters (configured, or the offline default)."""
    from tasks.models.registry import describe

    rows = [{"role": row["role"], "backend": row["backend"] or "none", "model": row["model"] or "",
             "params": row["params"] or {},
             "from": "config" if row["configured"] else ("default" if row["backend"] else "")}
            for row in describe(terminal.settings())]
    listing.show(rows, ("role", "backend", "model", "params", "from"), as_json=as_json,
                 shown=lambda column, value: (json.dumps(value) if value else "") if column == "params"
                 else str(value))


def models_check(role: Annotated[str, typer.Argument(
        help="chat, editor, detector, tagger, embedder or scorer.")]) -> None:
    """Load the backend configured for ROLE and put one small real request to it (uncached), printing the answer
    and how long it took: the quickest way to see that a vLLM server or a checkpoint path is right."""
    import time

    from tasks.models.probe import probe

    settings = terminal.settings()
    start = time.perf_counter()
    try:
        backend, answer = probe(settings, role)
    except Exception as error:  # any failure here is the answer the user asked for
        terminal.err.print(f"[red]{role}: failed[/red] {type(error).__name__}: {error}")
        raise typer.Exit(1) from None
    terminal.console.print(f"[green]{role} ok[/green] {backend.name} {backend.model or ''} in "
                           f"{time.perf_counter() - start:.1f} s: {answer}")


def sample_world(
    folder: Annotated[Path, typer.Argument(help="Where to write one folder per episode.")],
    episodes: Annotated[int, typer.Option(help="How many episodes; task types take turns.")] = 14,
    seed: Annotated[int, typer.Option(help="Seed of the first episode; the next ones count up.")] = 0,
    cameras: Annotated[str, typer.Option(help="Comma-separated: top, front, side, ego.")] = "top,front,side",
    width: Annotated[int, typer.Option(help="Frame width in pixels.")] = 320,
    height: Annotated[int, typer.Option(help="Frame height in pixels.")] = 240,
) -> None:
    """Render the bundled sample world: seeded tabletop episodes (pick-and-place, stacking, unstacking, pushing,
    insertion, gathering, swapping) filmed by several cameras, each with episode.json holding the key steps and
    the true object states of every frame."""
    from tasks.sources.sample_world import CAMERAS, TASK_TYPES, generate_episode, write_episode

    chosen = tuple(c.strip() for c in cameras.split(",") if c.strip())
    unknown = [c for c in chosen if c not in CAMERAS]
    if unknown:
        terminal.err.print(f"[red]error:[/red] unknown camera(s) {', '.join(unknown)}; cameras: "
                           f"{', '.join(CAMERAS)}")
        raise typer.Exit(2)
    with terminal.work_bar() as progress:
        bar = progress.add_task("rendering episodes", total=episodes)
        for index in range(episodes):
            episode = generate_episode(seed + index, TASK_TYPES[index % len(TASK_TYPES)])
            write_episode(episode, folder, cameras=chosen, size=(width, height))
            progress.advance(bar)
    terminal.console.print(f"wrote {episodes} episodes with cameras {', '.join(chosen)} to {folder}",
                           soft_wrap=True)  # the folder whole, to copy
