"""prefect.yaml names flows that exist, with parameters those flows accept."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import yaml
from prefect import Flow

REPO = Path(__file__).resolve().parent.parent


def test_every_deployment_points_at_a_flow_with_matching_parameters():
    config = yaml.safe_load((REPO / "prefect.yaml").read_text())
    assert config["prefect-version"] == importlib.metadata.version("prefect")
    deployments = config["deployments"]
    assert {d["name"] for d in deployments} >= {"nightly", "progress-build", "progress-backfill", "evaluate"}
    for deployment in deployments:
        path, _, name = deployment["entrypoint"].partition(":")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        flow = getattr(module, name)
        assert isinstance(flow, Flow), deployment["name"]
        accepted = set(inspect.signature(flow.fn).parameters)
        assert set(deployment.get("parameters", {})) <= accepted, deployment["name"]
        assert deployment["work_pool"]["name"] == "benchwright"
    nightly = next(d for d in deployments if d["name"] == "nightly")
    assert nightly["schedules"][0]["cron"] == "0 3 * * *"
