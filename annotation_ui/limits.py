"""Login limits: failures counted per account and per client address, a growing wait, and lockouts an admin lifts.

What is refused, and why (issue 46: a colleague's typos must not keep anyone else out):

- An **account** is what guessing is bounded by. After ``login_free_failures`` wrong passwords in a row (three by
  default: the attempt after the third must wait), every attempt for it must wait, the wait
  doubling per failure up to ``login_max_delay_s``; ``lockout_failures`` lock it for ``lockout_s`` or until an
  admin lifts it. A waiting or locked account is refused before its password is looked at, from any address: the
  right password does not open it, and a refusal costs no password check. So however many addresses a guesser
  uses, one account gets at most ``lockout_failures`` guesses per ``lockout_s``.
- An **address** never refuses the right password of an account that is not itself waiting or locked: people
  behind one NAT or proxy share it, and a count per address that refused everyone from it let one person's typos
  lock the others out. Refusing only wrong passwords would need the check, and then tell a guesser whether each
  guess was right, so it would slow nobody. Instead the address count tightens the account rule: an address with
  ``lockout_address_failures`` wrong passwords (over any accounts) is marked for ``lockout_s`` (listed and lifted
  like a lockout), and from it every account waits from its first wrong password on. Guessing across many accounts
  from one address is thereby slowed to one immediate guess per account, then the doubling waits, and stays bounded
  by the per-account lockout above.
- Lifting a name (``unlock``, from the app or ``benchwright annotate unlock`` in another process) clears its
  counts too; for an account, also its share of the counts of the addresses it failed from. The other process
  leaves the clearing in the lockout file, and the app applies it at its next login attempt.

The counters live in the app's memory; lockouts and clearings in a small SQLite file beside the catalog, so they
survive a restart and another process can lift them. The app checks one attempt per account and per address at a
time (see ``guard``), so parallel guesses cannot slip past the counters.

Only the standard library here: the CLI imports this module for ``unlock`` without starting the app.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from schemas.config import Settings

# counters kept for this many keys at most: a spray of made-up names or addresses cannot grow memory without end
MAX_KEYS = 100_000
# accounts whose share of one address's count is kept (to take it back on unlock); beyond, failures just count
MAX_SHARES = 1_000
# clearings kept in the lockout file: a running app applies them at its next login attempt
KEPT_CLEARINGS = 1_000

log = logging.getLogger("annotation_ui")


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
    """Lockouts, and the names whose counts were cleared, in SQLite. Reads come from a copy in memory, read again
    only when the file changed (SQLite's ``data_version``), so refusing a burst of guesses costs no file access per
    guess. ``clock`` is the wall clock (lockouts are shared with other processes); tests pass their own."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        """A ValueError of one line when ``path`` cannot hold the lockouts (a FIFO, a device, a folder, a file that
        is no SQLite database, a folder it cannot be made in)."""
        self.path = path
        self.clock = clock
        self._guard = threading.Lock()
        self._version: int | None = None
        self._cached: dict[str, Lockout] = {}
        self._clearings: list[tuple[int, str]] = []
        try:
            regular_or_none(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._con = sqlite3.connect(path, timeout=10, isolation_level=None, check_same_thread=False)
            self._con.execute("CREATE TABLE IF NOT EXISTS lockouts (key TEXT PRIMARY KEY, until REAL NOT NULL, "
                              "failures INTEGER NOT NULL, since REAL NOT NULL)")
            self._con.execute("CREATE TABLE IF NOT EXISTS clearings (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                              "key TEXT NOT NULL, at REAL NOT NULL)")
        except (OSError, sqlite3.Error) as error:
            why = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise ValueError(f"the lockout file {path} ([annotation] lockouts_path) cannot be used: {why}") from None

    def _all(self) -> dict[str, Lockout]:  # under self._guard
        version = self._con.execute("PRAGMA data_version").fetchone()[0]
        if version != self._version:  # another process wrote (our own writes reset _version)
            rows = self._con.execute("SELECT key, until, failures, since FROM lockouts").fetchall()
            self._cached, self._version = {row[0]: Lockout(*row) for row in rows}, version
            self._clearings = self._con.execute("SELECT id, key FROM clearings ORDER BY id").fetchall()
        return self._cached

    def lock(self, key: str, until: float, failures: int) -> None:
        with self._guard:
            self._con.execute("INSERT OR REPLACE INTO lockouts VALUES (?, ?, ?, ?)",
                              [key, until, failures, self.clock()])
            self._version = None

    def until(self, key: str) -> float | None:
        """When the lockout of ``key`` ends, or None when it is not locked (never, lifted or over)."""
        with self._guard:
            lockout = self._all().get(key)
        return lockout.until if lockout and lockout.until > self.clock() else None

    def lift(self, key: str) -> bool:
        with self._guard:
            self._version = None
            return self._con.execute("DELETE FROM lockouts WHERE key = ? AND until > ?",
                                     [key, self.clock()]).rowcount > 0

    def current(self) -> list[Lockout]:
        now = self.clock()
        with self._guard:
            return sorted((x for x in self._all().values() if x.until > now), key=lambda x: x.since)

    def lift_name(self, name: str) -> list[str]:
        """Lift the lockout of an account or an address called ``name`` and clear its failure counts (in every app
        using this file, at its next login attempt), locked or not; returns the keys whose lockout was lifted."""
        keys = (f"account:{name}", f"address:{name}")
        with self._guard:
            self._version = None
            self._con.executemany("INSERT INTO clearings (key, at) VALUES (?, ?)", [(k, self.clock()) for k in keys])
            self._con.execute("DELETE FROM clearings WHERE id <= (SELECT max(id) FROM clearings) - ?",
                              [KEPT_CLEARINGS])
        return [key for key in keys if self.lift(key)]

    def clearings_after(self, seen: int) -> list[tuple[int, str]]:
        """(id, key) of the clearings after the one numbered ``seen``, oldest first."""
        with self._guard:
            self._all()
            return [row for row in self._clearings if row[0] > seen]

    def last_clearing(self) -> int:
        with self._guard:
            self._all()
            return self._clearings[-1][0] if self._clearings else 0


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
    # an address's count by account (account key -> its wrong passwords in ``failures``), so that unlocking an
    # account takes back what its owner's typos added to the address
    shares: dict[str, int] = field(default_factory=dict)


class LoginLimiter:
    """Decides whether a login attempt may be checked, and counts what the check found. ``clock`` (monotonic
    seconds) times the waits; tests pass their own and move it instead of sleeping."""

    def __init__(self, settings: Settings, store: LockoutStore, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.settings = settings.annotation
        self.store = store
        self.clock = clock
        self._strikes: OrderedDict[str, _Strikes] = OrderedDict()
        self._lock = threading.Lock()
        self._seen = store.last_clearing()  # clearings made before this app started concern no count of it

    def refusal(self, name: str, address: str) -> Refusal | None:
        """Why an attempt for account ``name`` from ``address`` may not be checked now, or None when it may. Only
        the account's own wait or lockout refuses (see the module's notes on addresses)."""
        self._apply_clearings()
        until = self.store.until(f"account:{name}")
        if until is not None:
            after = math.ceil(until - self.store.clock())
            return Refusal(f"account {name} is locked after repeated failed logins: try again in {after} s, or ask "
                           f"an admin to unlock it (benchwright annotate unlock {name})", after)
        now = self.clock()
        with self._lock:
            strike = self._strikes.get(f"account:{name}")
            if strike is not None and strike.wait_until > now and now - strike.last <= self.settings.login_window_s:
                after = math.ceil(strike.wait_until - now)
                return Refusal(f"too many failed logins for account {name}: try again in {after} s", after)
        return None

    def record(self, name: str, address: str, succeeded: bool) -> None:
        """Count a checked attempt: a wrong password adds to the account's and the address's counts, and may make
        the account wait, lock it, or mark the address; the right one clears the account's count (not the
        address's: one good account opens no others)."""
        account, place = f"account:{name}", f"address:{address}"
        now = self.clock()
        marked = self.store.until(place) is not None
        with self._lock:
            strike = self._get(account, now)
            if succeeded:
                strike.failures, strike.wait_until = 0, 0.0
                return
            strike.failures += 1
            strike.last = now
            # from a marked address every wrong password counts as beyond the free ones
            free = 0 if marked else self.settings.login_free_failures
            if strike.failures >= max(free, 1):  # the free-th failure already makes the next attempt wait
                steps = strike.failures - max(free, 1)
                strike.wait_until = now + min(self.settings.login_max_delay_s,
                                              self.settings.login_delay_s * 2 ** min(steps, 62))
            locking = self._count_address(place, account, now, marked)
            if strike.failures >= self.settings.lockout_failures:
                locking.append((account, strike.failures))
                strike.failures, strike.wait_until = 0, 0.0  # counted afresh once the lockout is lifted
        for key, failures in locking:  # for the people running the app: who is locked out, or why logins wait
            if key == account:
                log.warning("login: account %s locked for %.0f s after %d failed logins (the last from %s)", name,
                            self.settings.lockout_s, failures, address)
            else:
                log.warning("login: address %s marked for %.0f s after %d failed logins (the last for account %s): "
                            "every account waits from its first failed login from it", address,
                            self.settings.lockout_s, failures, name)
            self.store.lock(key, self.store.clock() + self.settings.lockout_s, failures)

    def _count_address(self, place: str, account: str, now: float, marked: bool) -> list[tuple[str, int]]:
        """Add a wrong password for ``account`` to the address's count (under self._lock); the address to mark,
        when this one reaches the limit."""
        strike = self._get(place, now)
        strike.failures += 1
        strike.last = now
        if account in strike.shares or len(strike.shares) < MAX_SHARES:
            strike.shares[account] = strike.shares.get(account, 0) + 1
        if strike.failures < self.settings.lockout_address_failures or marked:
            return []
        failures = strike.failures
        strike.failures, strike.shares = 0, {}  # counted afresh once the mark is lifted or over
        return [(place, failures)]

    def forget(self, key: str) -> None:
        """Clear the counts of ``key``; for an account, also its share of every address's count."""
        with self._lock:
            self._strikes.pop(key, None)
            if key.startswith("account:"):
                for strike in self._strikes.values():
                    taken = strike.shares.pop(key, 0)
                    strike.failures = max(0, strike.failures - taken)

    def _apply_clearings(self) -> None:
        """Clear what ``unlock`` cleared since the last attempt, in this process or another (the lockout file)."""
        for number, key in self.store.clearings_after(self._seen):
            self.forget(key)
            self._seen = max(self._seen, number)

    def _get(self, key: str, now: float) -> _Strikes:  # under self._lock
        strike = self._strikes.get(key)
        if strike is None or now - strike.last > self.settings.login_window_s:
            strike = self._strikes[key] = _Strikes()
        self._strikes.move_to_end(key)
        while len(self._strikes) > MAX_KEYS:
            self._strikes.popitem(last=False)
        return strike
