"""Leases: which item each annotator asking for work gets, decided for all who asked at once.

An item is leased to an annotator when they ask for the next one in a queue and stays theirs until they answer,
skip, or the lease expires. An annotator's own live lease in the queue comes first (oldest first); else the oldest
open item they have not answered whose overlap has room, where answers in force and live leases are counted
together, once per annotator. The app serves everyone waiting for its lock in one turn (``Work``), so one
query of the open items serves them all: each is given, in the order they asked, the first item with room for
them, and counts as one of its takers for the next.

The SQL runs in DuckDB and PostgreSQL alike.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tasks.resolving import IN_FORCE_WHERE

ROWS_PER_ASKER = 16  # open items read per annotator asking, beyond the overlap's worth; more are read if needed


@dataclass
class Ask:
    """An annotator asking for an item of ``queue``, never one of ``skipped``; ``leased`` is what they got:
    (item id, its target's id when known)."""
    annotator: str
    queue: str
    skipped: tuple[str, ...] = ()
    leased: tuple[str, str | None] | None = None


@dataclass
class _Open:
    item_id: str
    target_id: str
    takers: set[str] = field(default_factory=set)


def lease_all(con: Any, asks: list[Ask], overlap_of: Callable[[str], int], lease_s: float, *,
              releasing: list[tuple[str, str]] = ()) -> dict[str, list[tuple[str, str]]]:
    """Give each ask its item (``Ask.leased``; None when the queue has nothing for them), leasing the new ones for
    ``lease_s`` seconds; the (annotator, item) leases of ``releasing`` (items just answered) go in the same
    statements. Returns, per queue asked for, the open items read that still have room, (item, target), oldest
    first: the ones the next asks will most likely get."""
    now = datetime.now(UTC)
    held = _held(con, asks, now)
    granted: list[tuple[str, str, str]] = []  # (item, annotator, queue)
    by_queue: dict[str, list[Ask]] = defaultdict(list)
    upcoming: dict[str, list[tuple[str, str]]] = {}
    for ask in asks:
        mine = [item for item, queue in held.get(ask.annotator, []) if queue == ask.queue and item not in ask.skipped]
        if mine:
            ask.leased = (mine[0], None)
        else:
            by_queue[ask.queue].append(ask)
    for queue, waiting in by_queue.items():
        given, rows = _assign(con, queue, waiting, overlap_of(queue), now)
        for ask, item in given:
            ask.leased = (item.item_id, item.target_id)
            granted.append((item.item_id, ask.annotator, queue))
        upcoming[queue] = [(o.item_id, o.target_id) for o in rows if len(o.takers) < overlap_of(queue)]
    lease_to(con, granted, lease_s, releasing=releasing)
    return upcoming


def _held(con: Any, asks: list[Ask], now: datetime) -> dict[str, list[tuple[str, str]]]:
    """Each asking annotator's live leases, (item, queue), oldest first."""
    who = sorted({ask.annotator for ask in asks})
    if not who:
        return {}
    rows = con.execute(f"SELECT annotator, item_id, queue FROM leases WHERE annotator IN ({', '.join('?' * len(who))})"
                       " AND expires_at >= ? ORDER BY leased_at, item_id", [*who, now]).fetchall()
    held: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for annotator, item, queue in rows:
        held[annotator].append((item, queue))
    return held


def _assign(con: Any, queue: str, asks: list[Ask], overlap: int, now: datetime
            ) -> tuple[list[tuple[Ask, _Open]], list[_Open]]:
    """(ask, item) for each ask of ``queue`` that an open item has room for, in the order they asked, and the open
    items read (their takers counted with these asks). The open items are read ``ROWS_PER_ASKER`` per ask beyond
    the overlap's worth; when an ask found none of them free (it answered them all) and there may be more, they
    are read again, four times as many."""
    limit = len(asks) * (overlap + ROWS_PER_ASKER)
    while True:
        rows = _open_items(con, queue, overlap, limit, now)
        given: list[tuple[Ask, _Open]] = []
        for ask in asks:
            item = next((o for o in rows if ask.annotator not in o.takers and len(o.takers) < overlap
                         and o.item_id not in ask.skipped), None)
            if item is not None:
                item.takers.add(ask.annotator)
                given.append((ask, item))
        if len(given) == len(asks) or len(rows) < limit:
            return given, rows
        limit *= 4


def _open_items(con: Any, queue: str, overlap: int, limit: int, now: datetime) -> list[_Open]:
    """The oldest ``limit`` open items of ``queue`` with room, and who has taken each: answered it (in force)
    or holds a live lease on it, each annotator once."""
    rows = con.execute(
        f"""WITH taken AS (SELECT payload->>'item_id' AS item_id, payload->>'annotator' AS annotator
                          FROM records WHERE {IN_FORCE_WHERE}
                          UNION SELECT item_id, annotator FROM leases WHERE expires_at >= $now),
                counted AS (SELECT item_id, count(*) AS n, array_agg(annotator) AS takers FROM taken GROUP BY item_id)
            SELECT r.id, r.payload->>'target_id', c.takers FROM records r LEFT JOIN counted c ON c.item_id = r.id
            WHERE r.kind = 'review_item' AND r.status = 'candidate' AND r.payload->>'queue' = $queue
              AND coalesce(c.n, 0) < $overlap
            ORDER BY r.created_at, r.id LIMIT $limit""",
        {"now": now, "queue": queue, "overlap": overlap, "limit": limit}).fetchall()
    return [_Open(item, target, set(takers or ())) for item, target, takers in rows]


def lease_to(con: Any, grants: list[tuple[str, str, str]], lease_s: float, *,
             releasing: list[tuple[str, str]] = ()) -> None:
    """Each (item, annotator, queue) of ``grants`` leased for ``lease_s`` seconds from now, replacing a lease the
    annotator had on the item (an undo's, or one that expired); the (annotator, item) leases of ``releasing`` let
    go in the same statement. A delete and an insert, not ``INSERT ... ON CONFLICT DO UPDATE``: in DuckDB the upsert
    took about 6 ms of an answer's 54 ms of statements, the two statements together about 2."""
    now = datetime.now(UTC)
    release_pairs(con, [*releasing, *((annotator, item) for item, annotator, _ in grants)])
    if grants:
        con.execute(f"INSERT INTO leases VALUES {', '.join(['(?, ?, ?, ?, ?)'] * len(grants))}",
                    [value for item, annotator, queue in grants
                     for value in (item, annotator, queue, now, now + timedelta(seconds=lease_s))])


def release_pairs(con: Any, pairs: list[tuple[str, str]]) -> None:
    """Let go of each (annotator, item) lease named (one statement; none when nothing is named)."""
    unique = list(dict.fromkeys(pairs))
    if unique:
        con.execute(f"DELETE FROM leases WHERE {' OR '.join(['(annotator = ? AND item_id = ?)'] * len(unique))}",
                    [value for pair in unique for value in pair])
