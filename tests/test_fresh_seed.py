"""Every scheduled build of a generated benchmark draws afresh: the weekly deployments hand the build flow
``fresh_seed``, which gives the benchmark the seed of the day the run was scheduled for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from flows.fresh_seed import seed_of_day, with_fresh_seed
from tasks import benchmarks

REPO = Path(__file__).resolve().parent.parent
SATURDAY = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)


def _fields(name: str) -> dict:
    options = benchmarks.get(name).build_options
    return options.model_fields if options else {}


def test_each_scheduled_day_draws_its_own_seed_and_a_rerun_the_same_one():
    weeks = [seed_of_day(SATURDAY + timedelta(weeks=n)) for n in range(3)]
    assert weeks == [20261205, 20261212, 20261219]
    assert seed_of_day(SATURDAY + timedelta(hours=20)) == weeks[0]  # a retry later that day draws the same


@pytest.mark.parametrize("name", ["vic", "webplan"])
def test_a_generated_benchmark_gets_the_day_seed_unless_its_options_name_one(name: str):
    assert with_fresh_seed({"count": 5}, _fields(name), name, SATURDAY) == {"count": 5, "seed": 20261205}
    assert with_fresh_seed({"seed": 7}, _fields(name), name, SATURDAY) == {"seed": 7}
    assert with_fresh_seed(None, _fields(name), name, SATURDAY) == {"seed": 20261205}
    assert benchmarks.get(name).options({"seed": 20261205}).seed == 20261205  # the model takes what it is handed


def test_a_benchmark_built_from_its_sources_has_no_seed_to_draw_with():
    with pytest.raises(ValueError, match="progress's build takes no seed"):
        with_fresh_seed({}, _fields("progress"), "progress", SATURDAY)


def test_every_scheduled_build_of_a_benchmark_that_takes_a_seed_draws_afresh():
    deployments = yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]
    scheduled = [d for d in deployments if d["entrypoint"] == "flows/build.py:build" and d.get("schedules")]
    seeded = {d["parameters"]["benchmark"]: d["parameters"].get("fresh_seed", False) for d in scheduled
              if "seed" in _fields(d["parameters"]["benchmark"])}
    assert seeded == {"vic": True, "webplan": True}
    unseeded = [d["name"] for d in scheduled if "seed" not in _fields(d["parameters"]["benchmark"])
                and d["parameters"].get("fresh_seed")]
    assert not unseeded, f"{unseeded} ask for a fresh seed their benchmark cannot take"


@pytest.mark.slow
def test_the_build_flow_draws_with_the_day_seed_and_says_so(tmp_path: Path):
    import json

    from prefect.testing.utilities import prefect_test_harness

    from flows.build import build
    from schemas.config import BlobSettings, CatalogSettings, Settings
    from storage import open_storage

    settings = Settings(catalog=CatalogSettings(path=tmp_path / "catalog.duckdb"),
                        blobs=BlobSettings(uri=f"file://{tmp_path / 'blobs'}"))
    before = datetime.now(UTC)
    with prefect_test_harness(server_startup_timeout=180):
        build("vic", settings, options={"tasks": ["maze"], "count": 1}, fresh_seed=True)
    days = {seed_of_day(before), seed_of_day(datetime.now(UTC))}  # a run across midnight: either day
    rows = open_storage(settings).catalog.query("SELECT producer FROM records WHERE kind = 'vic_instance'")
    seeds = {json.loads(producer)["params"]["seed"] for (producer,) in rows}
    assert len(seeds) == 1 and seeds <= days, seeds
