"""``benchwright annotate unlock``: list login lockouts, or lift them and clear the failure counts behind them.

It runs in a process of its own, beside a running app: it writes to the lockout file, which the app reads at its
next login attempt (``annotation_ui.limits``). A lockout file that cannot be used is one line (``ValueError``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from schemas.config import Settings


def unlock(settings: Settings, names: list[str], echo: Callable[[str], None]) -> list[str]:
    """With no ``names``, echo the lockouts in force; else lift each name's lockout (account or address) and clear
    its failure counts, echoing what was done. Returns the names that had no lockout."""
    from annotation_ui.limits import LockoutStore, lockouts_path

    store = LockoutStore(lockouts_path(settings))
    if not names:
        for lockout in store.current():
            until = datetime.fromtimestamp(lockout.until, UTC).isoformat(timespec="seconds")
            echo(f"{lockout.key}\tuntil {until}\t{lockout.failures} failures")
        return []
    missing = []
    for name in names:
        lifted = store.lift_name(name)  # clears the counts too, in a running app at its next login attempt
        if lifted:
            echo(f"{name}: unlocked ({', '.join(lifted)}); its failed-login counts are cleared")
        else:
            echo(f"{name}: no lockout (any failed-login counts of it are cleared)")
            missing.append(name)
    return missing
