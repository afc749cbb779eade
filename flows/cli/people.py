"""Where people come in: ``benchwright annotate`` (the annotation app, its accounts and lockouts) and ``review
recheck`` (released records sent back to them)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

import flows.cli.terminal as terminal


def annotate(ctx: typer.Context,
             host: Annotated[str | None, typer.Option(help="Address to listen on; default \\[annotation] host "
                                                           "(127.0.0.1).")] = None,
             port: Annotated[int | None, typer.Option(
                 help="Port; default \\[annotation] port (7860).")] = None) -> None:
    """Serve the annotation app: a queue per review the benchmarks declare (YES/NO filters, corrections) and
    rechecks, with keyboard shortcuts (y, n, s, u) and an admin view (progress, throughput, agreement, export).

    Accounts come from \\[\\[annotation.users]] in the configuration (name, role annotator|admin, password_hash
    from `benchwright annotate hash-password`). Overlap per queue: \\[annotation] overlap = {QUEUE = 2}.
    """
    if ctx.invoked_subcommand is not None:
        return
    settings = terminal.settings()
    if not settings.annotation.users:
        terminal.err.print(escape("error: no accounts to log in with. Add one per person to the configuration:\n"
                                  "[[annotation.users]]\nname = \"ann1\"\nrole = \"annotator\"   # or \"admin\"\n"
                                  "password_hash = \"...\"   # from `benchwright annotate hash-password`"),
                           soft_wrap=True)
        raise typer.Exit(1)
    with terminal.failures_as_messages():
        from annotation_ui.app import serve

        where = f"http://{host or settings.annotation.host}:{port or settings.annotation.port}/"
        terminal.console.print(f"annotation app on {where} (Ctrl-C stops it)")
        serve(settings, host=host, port=port)


def hash_password_command() -> None:
    """Ask for a password (twice, not echoed) and print the hash to put in \\[\\[annotation.users]] password_hash."""
    from annotation_ui.accounts import hash_password

    password = typer.prompt("password", hide_input=True, confirmation_prompt=True, err=True)  # stdout: the hash
    typer.echo(hash_password(password))  # one unwrapped line, to paste


def annotate_unlock(names: Annotated[list[str] | None, typer.Argument(
        help="Accounts or client addresses to unlock; none: list the lockouts.")] = None) -> None:
    """Lift login lockouts and clear the failure counts behind them (a running app sees it at the next attempt),
    or list them. An account is locked after \\[annotation] lockout_failures failed logins, for lockout_s seconds;
    an address with lockout_address_failures is marked (every account waits from its first failure from it)."""
    from flows.login_admin import unlock

    with terminal.failures_as_messages():  # a lockout file that cannot be used: one line
        missing = unlock(terminal.settings(), list(names or ()), typer.echo)
    if missing:
        raise typer.Exit(1)


def review_recheck(tag: Annotated[str, typer.Argument(help="Release NAME or NAME@VERSION (default: newest).")],
                   sample: Annotated[int | None, typer.Option(
                       help="Send a random sample of this many records (default: all of them).")] = None,
                   seed: Annotated[int, typer.Option(help="Seed of the sample, so it can be drawn again.")] = 0,
                   kind: Annotated[list[str] | None, typer.Option(
                       help="Only records of this kind (repeatable), as `benchwright records stats` lists them.")]
                   = None) -> None:
    """Send records of a release (or a sample of them) to the annotation app's Recheck queue. A record people
    reject there is rejected in the catalog, so the next release leaves it out; sending the same release again
    adds nothing."""
    from tasks.review import publish_rechecks

    catalog = terminal.storage().catalog
    with terminal.failures_as_messages():
        items, new = publish_rechecks(catalog, tag, sample=sample, seed=seed, kinds=tuple(kind or ()))
    terminal.console.print(f"{len(items)} records of {escape(tag)} in the recheck queue ({new} new, "
                           f"{len(items) - new} sent before); review them with `benchwright annotate`, Recheck tab",
                           soft_wrap=True)
