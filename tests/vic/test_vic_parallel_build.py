"""ViC-Bench's generate stage on worker processes: the same records, and the same release, whatever the number of
workers; draws taken in spec order however they were cut into chunks."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from schemas import Status
from schemas.config import BlobSettings, CatalogSettings, ComputeSettings, Settings
from storage import open_storage
from tasks import benchmarks
from tasks.vic.task import Drawn, DrawPlan, VicInstance, VicTask


def _build(folder: Path, workers: int) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A ViC-Bench of 8 instances per task (32 draws: enough for two workers, ``MIN_DRAWS_PER_WORKER``) built with
    ``workers`` processes, its review accepted and released: (counts, every record's content by id, the release's
    content hash)."""
    from storage.releases import load_release
    from tasks.benchmark import BuildContext
    from tasks.vic.options import VicBuildOptions
    from tasks.vic.stages import generate_stage

    settings = Settings(catalog=CatalogSettings(path=folder / "catalog.duckdb"),
                        blobs=BlobSettings(uri=f"file://{folder}/blobs"), compute=ComputeSettings(workers=workers))
    counts = generate_stage(settings, BuildContext(benchmark="vic", run_id=None, options=VicBuildOptions(count=8)))
    catalog = open_storage(settings).catalog
    records = {r.id: (r.kind, r.payload, [(b.sha256, b.role) for b in r.blobs], r.parents)
               for r in catalog.find_records(benchmark="vic")}
    candidates = [r.id for r in catalog.find_records(kind="vic_instance", status=Status.CANDIDATE)]
    catalog.set_status(candidates, Status.ACCEPTED, reason="rechecked (test)", actor="test")
    [tag] = benchmarks.get("vic").freezer()(settings, "t", {})
    return counts, records, load_release(catalog, tag).content_hash()


def test_one_worker_and_two_build_the_same_records_and_release(tmp_path: Path) -> None:
    from tasks.vic.stages import workers_for

    assert (workers_for(32, 2), workers_for(12, 2), workers_for(1000, 4)) == (2, 1, 4)  # the demo's 12: one
    one = _build(tmp_path / "one", workers=1)
    two = _build(tmp_path / "two", workers=2)
    counts, records, content = one
    assert counts["instances"] == 32 and counts["quarantined"] == 0
    assert {name: counts[name]["instances"] for name in ("maze", "jigsaw", "embodied", "counting")} == {
        "maze": 8, "jigsaw": 8, "embodied": 8, "counting": 8}
    assert sorted(two[1]) == sorted(records)  # the same ids...
    assert two[1] == records  # ...of the same content
    assert two[0] == counts and two[2] == content


class _Toy(VicTask):
    """Specs 0..n: a spec that is 3 mod 5 is a refused input, 0 mod 7 comes to nothing, and the signature is the
    spec mod 4, so later draws repeat earlier ones."""

    name = "toy"

    def plan(self, count: int, seed: int, options: dict[str, Any]) -> DrawPlan:
        return DrawPlan(range(4 * count), {}, rejected=(("before", "unreadable"),))

    def draws(self, specs: Sequence[Any], settings: Any) -> Iterator[Drawn]:
        for spec in specs:
            if spec % 5 == 3:
                yield Drawn(refused=(f"input {spec}", "no puzzle"))
            elif spec % 7 == 0:
                yield Drawn()
            else:
                instance = VicInstance(task="toy", key=str(spec), stage_one=None, open_form=None, meta={})  # type: ignore[arg-type]
                yield Drawn(instance, signature=spec % 4)


def _one_by_one(count: int) -> tuple[list[str], list[Any]]:
    """What a loop over the specs that stops at ``count`` keeps (the definition the draws must meet)."""
    kept: list[str] = []
    refused: list[Any] = [("before", "unreadable")]
    seen: set[int] = set()
    for spec in range(4 * count):
        if len(kept) == count:
            break
        if spec % 5 == 3:
            refused.append((f"input {spec}", "no puzzle"))
        elif spec % 7 and spec % 4 not in seen:
            seen.add(spec % 4)
            kept.append(str(spec))
    return kept, refused


@pytest.mark.parametrize("count", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_draws_cut_into_chunks_are_taken_as_one_by_one(count: int, workers: int) -> None:
    from tasks.vic.drawing import chunks_of
    from tasks.vic.taking import Taking, drawn_here

    toy = _Toy()
    instances, refused = drawn_here(toy, count, 0, {})
    assert ([i.key for i in instances], refused) == _one_by_one(count)
    plan = toy.plan(count, 0, {})

    def in_chunks(specs: Sequence[Any]) -> Iterator[tuple[Drawn, str]]:  # each chunk drawn on its own
        for chunk in chunks_of(specs, workers):
            yield from ((drawn, drawn.instance.key if drawn.instance else "") for drawn in toy.draws(chunk, {}))

    taking: Taking[str] = Taking(count, refused=list(plan.rejected))
    taking.take_all(in_chunks(plan.specs[:count]))
    assert (taking.topped_up(plan.specs, count, in_chunks).taken, taking.refused) == _one_by_one(count)
