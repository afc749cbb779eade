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


def test_a_commands_flow_sends_heartbeats_only_as_configured_and_a_deployments_keep_prefects() -> None:
    """Prefect's heartbeat setting as the flow engine reads it when a run starts, inside a flow: none for a command's
    flow by default, the configured interval when set; outside the block (a worker's deployment run) Prefect's own."""
    from prefect import flow
    from prefect.settings import get_current_settings
    from prefect.testing.utilities import prefect_test_harness

    from flows.runtime import at_the_terminal
    from schemas.config import PrefectSettings, Settings

    @flow
    def heartbeat_seen_by_the_run() -> int | None:
        return get_current_settings().flows.heartbeat_frequency

    prefects_own = get_current_settings().flows.heartbeat_frequency
    assert prefects_own is not None  # Prefect 3.8 beats every 180 s unless told otherwise
    with prefect_test_harness(server_startup_timeout=180):
        with at_the_terminal(Settings()):
            assert heartbeat_seen_by_the_run() is None
        with at_the_terminal(Settings(prefect=PrefectSettings(command_heartbeat_s=45))):
            assert heartbeat_seen_by_the_run() == 45
        assert heartbeat_seen_by_the_run() == prefects_own


def test_a_run_records_its_deployment_and_a_commands_run_does_not_ask_the_server(monkeypatch) -> None:
    """``deployment_name``: None at once for a flow a command starts (Prefect's own lookup reads the run from the
    server first); a subflow, or a run with Prefect's environment override, gets Prefect's answer."""
    import prefect.runtime.deployment as runtime_deployment
    from prefect import flow
    from prefect.testing.utilities import prefect_test_harness

    from flows.runtime import deployment_name

    asked: list[str] = []

    def prefects_lookup() -> str:
        asked.append("server")
        return "nightly"

    monkeypatch.setitem(runtime_deployment.FIELDS, "name", prefects_lookup)

    @flow
    def child() -> str | None:
        return deployment_name()

    @flow
    def parent() -> tuple[str | None, str | None]:
        return deployment_name(), child()

    with prefect_test_harness(server_startup_timeout=180):
        assert parent() == (None, "nightly") and asked == ["server"]
        monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__NAME", "by-hand")
        assert child() == "by-hand"
