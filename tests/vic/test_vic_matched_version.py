"""A fresh version drawn harder than the one before it is resampled until it is as hard (``[release]
match_difficulty``), and says so; without the setting it is released as drawn, flagged."""

from __future__ import annotations

from schemas import Status
from schemas.config import ReleaseSettings, Settings
from storage import open_storage
from tasks import benchmarks


def _accept(settings: Settings, seed: int, count: int, keep=lambda record: True) -> None:
    from tasks.vic.stages import build_task

    storage = open_storage(settings)
    build_task(storage, "maze", count, seed, {}, None)
    made = [r for r in storage.catalog.find_records(kind="vic_instance", status=Status.CANDIDATE) if keep(r)]
    storage.catalog.set_status([r.id for r in made], Status.ACCEPTED, reason="rechecked (test)", actor="test")


def _skewed_version(settings: Settings) -> dict:
    """A first version of 80 mazes, then one drawn with a surplus of 8-move mazes: its freeze's difficulty."""
    from storage.releases import load_release

    freeze = benchmarks.get("vic").freezer()
    _accept(settings, 1, 80)
    freeze(settings, "t", {})
    _accept(settings, 3, 60)
    _accept(settings, 4, 300, keep=lambda record: len(record.payload["meta"]["moves"]) == 8)
    return load_release(open_storage(settings).catalog, freeze(settings, "t", {})[0]).params["difficulty"]


def test_a_skewed_fresh_version_is_released_flagged_by_default(settings: Settings) -> None:
    difficulty = _skewed_version(settings)
    assert "maze/moves" in difficulty["differs"] and "resampled" not in difficulty


def test_with_match_difficulty_it_is_resampled_until_no_descriptor_differs(settings: Settings) -> None:
    matching = settings.model_copy(update={"release": ReleaseSettings(match_difficulty=True, min_kept_share=0.3)})
    difficulty = _skewed_version(matching)
    assert difficulty["differs"] == []
    resampled = difficulty["resampled"]
    assert resampled["matched"] and 0 < resampled["left out"] <= 0.7 * resampled["drawn"]
    assert resampled["kept"] == {row["descriptor"]: row for row in difficulty["descriptors"]}["maze/moves"]["new n"]
