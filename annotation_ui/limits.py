"""Login limits: failures counted per account and per client address, a growing wait, and lockouts an admin lifts.

The counters live in the app's memory; lockouts in a small SQLite file beside the catalog, so they survive a
restart and ``benchwright annotate unlock`` (another process) can lift them. An attempt that must wait, or that
names a locked account or comes from a locked address, is refused before its password is looked at: the right
password does not open a locked account, and a refusal costs the server no password check. The app checks one
attempt per account and per address at a time (see ``guard``), so parallel guesses cannot slip past the counters.

Only the standard library here: the CLI imports this module for ``unlock`` without starting the app.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from schemas.config import Settings

# counters kept for this many keys at most: a spray of made-up names or addresses cannot grow memory without end
MAX_KEYS = 100_000


def lockouts_path(settings: Settings) -> Path:
    named = settings.annotation.lockouts_path
    return Path(named) if named else Path(settings.catalog.path).with_name("annotation-lockouts.sqlite")


def regular_or_none(path: Path) -> None:
    """Nothing when ``path`` is a regular file or names nothing yet; an OSError saying what it is otherwise (SQLite
    would fail on a FIFO or a device with "disk I/O error", and write /dev/null's lockouts nowhere)."""
    import errno
    import os
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a folder" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file")
        raise OSError(errno.EINVAL, f"it is {kind}, not a regular file")


@dataclass(frozen=True)
class Lockout:
    key: str  # "account:NAME" or "address:IP"
    until: float  # unix time
    failures: int
    since: float


class LockoutStore:
    """Lockouts in SQLite. Reads come from a copy in memory, read again only when the file changed (SQLite's
    ``data_version``), so refusing a burst of guesses costs no file access per guess."""

    def __init__(self, path: Path) -> None:
        """A ValueError of one line when ``path`` cannot hold the lockouts (a FIFO, a device, a folder, a file that
        is no SQLite database, a folder it cannot be made in)."""
        self.path = path
        self._guard = threading.Lock()
        self._version: int | None = None
        self._cached: dict[str, Lockout] = {}
        try:
            regular_or_none(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._con = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
            self._con.execute("CREATE TABLE IF NOT EXISTS lockouts (key TEXT PRIMARY KEY, until REAL NOT NULL, "
                              "failures INTEGER NOT NULL, since REAL NOT NULL)")
        except (OSError, sqlite3.Error) as error:
            why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise ValueError(f"the lockout file {path} ([annotation] lockouts_path) cannot be used: {why}") from None

    def _all(self) -> dict[str, Lockout]:  # under self._guard
        version = self._con.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:  # another process wrote (our own writes reset _version)
            rows = self._con.execute("SELECT key, until, failures, since FROM lockouts").fetchall()
            self._cached, self._version = {row[0]: Lockout(*row) for row in rows}, version
        return self._cached

    def lock(self, key: str, until: float, failures: int) -> None:
        with self._guard:
            self._con.execute("INSERT OR REPLACE INTO lockouts VALUES (?, ?, ?, ?)",
                              [key, until, failures, time.time()])
            self._version = None

    def until(self, key: str) -> float | None:
        """When the lockout of ``key`` ends, or None when it is not locked (never, lifted or over)."""
        with self._guard:
            lockout = self._all().get(key)
        return lockout.until if lockout and lockout.until > time.time() else None

    def lift(self, key: str) -> bool:
        with self._guard:
            self._version = None
            return self._con.execute("DELETE FROM lockouts WHERE key = ? AND until > ?",
                                     [key, time.time()]).rowcount > 0

    def current(self) -> list[Lockout]:
        now = time.time()
        with self._guard:
            return sorted((x for x in self._all().values() if x.until > now), key=lambda x: x.since)

    def lift_name(self, name: str) -> list[str]:
        """Lift the lockout of an account or an address called ``name``; returns the keys lifted."""
        return [key for key in (f"account:{name}", f"address:{name}") if self.lift(key)]


@dataclass(frozen=True)
class Refusal:
    """Why an attempt is refused before its check, and when to come back (whole seconds, for Retry-After)."""

    message: str
    retry_after_s: int


@dataclass
class _Strikes:
    failures: int = 0
    last: float = 0.0
    wait_until: float = 0.0


class LoginLimiter:
    """Decides whether a login attempt may be checked, and counts what the check found."""

    def __init__(self, settings: Settings, store: LockoutStore, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.settings = settings.annotation
        self.store = store
        self.clock = clock
        self._strikes: OrderedDict[str, _Strikes] = OrderedDict()
        self._lock = threading.Lock()

    def refusal(self, name: str, address: str) -> Refusal | None:
        """Why an attempt for account ``name`` from ``address`` may not be checked now, or None when it may."""
        for key in _keys(name, address):
            until = self.store.until(key)
            if until is not None:
                what = f"account {name}" if key.startswith("account:") else f"address {address}"
                return Refusal(f"{what} is locked after repeated failed logins; an admin can lift it "
                               f"(benchwright annotate unlock {key.split(':', 1)[1]})", math.ceil(until - time.time()))
        now = self.clock()
        with self._lock:
            for key in _keys(name, address):
                strike = self._get(key, now)
                if strike.wait_until > now:
                    return Refusal(f"too many failed logins for this {key.split(':')[0]}; wait before trying again",
                                   math.ceil(strike.wait_until - now))
        return None

    def record(self, name: str, address: str, succeeded: bool) -> None:
        """Count a checked attempt: a failure adds to the account's and the address's strikes, and may lock them; a
        success clears the account's."""
        now = self.clock()
        lock = []
        with self._lock:
            for key in _keys(name, address):
                strike = self._get(key, now)
                if succeeded:
                    if key.startswith("account:"):  # an address keeps its count: one good account opens no others
                        strike.failures, strike.wait_until = 0, 0.0
                    continue
                strike.failures += 1
                strike.last = now
                beyond = strike.failures - self.settings.login_free_failures
                if beyond > 0:
                    delay = min(self.settings.login_max_delay_s, self.settings.login_delay_s * 2 ** (beyond - 1))
                    strike.wait_until = now + delay
                limit = (self.settings.lockout_failures if key.startswith("account:")
                         else self.settings.lockout_address_failures)
                if strike.failures >= limit:
                    lock.append((key, strike.failures))
                    strike.failures, strike.wait_until = 0, 0.0  # counted afresh once the lockout is lifted
        for key, failures in lock:
            self.store.lock(key, time.time() + self.settings.lockout_s, failures)

    def forget(self, key: str) -> None:
        with self._lock:
            self._strikes.pop(key, None)

    def _get(self, key: str, now: float) -> _Strikes:  # under self._lock
        strike = self._strikes.get(key)
        if strike is None or now - strike.last > self.settings.login_window_s:
            strike = self._strikes[key] = _Strikes()
        self._strikes.move_to_end(key)
        while len(self._strikes) > MAX_KEYS:
            self._strikes.popitem(last=False)
        return strike


def _keys(name: str, address: str) -> tuple[str, str]:
    return f"account:{name}", f"address:{address}"
