"""Process-wide settings that must be in place before Prefect is imported."""

from __future__ import annotations

import functools
import inspect
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from flows.home import prefect_home, recorded, with_quiet_defaults
from flows.http_api_tls import skip_ca_bundle_for_http_api
from flows.prefect_database import seed_database
from schemas.config import Settings

F = TypeVar("F", bound=Callable[..., dict[str, Any]])


def prepare_prefect(settings: Settings | None) -> None:
    """Quiet, offline defaults (the environment still wins), a new home's database from the template
    (``flows.prefect_database``), and the Prefect server to use: ``PREFECT_API_URL``,
    else ``[prefect] api_url``, else the one ``benchwright server start`` keeps (when its process still runs);
    with none, each flow starts a temporary server. An http API's clients parse no CA bundle
    (``flows.http_api_tls``)."""
    with_quiet_defaults()
    if "PREFECT_API_URL" not in os.environ:
        if settings and settings.prefect.api_url:
            os.environ["PREFECT_API_URL"] = settings.prefect.api_url
        else:
            # before a server (kept or temporary) starts on a new home: a copy, not Prefect's migrations (a server
            # named by the environment or the configuration is elsewhere: nothing is made here for it)
            seed_database(prefect_home())
            kept = recorded()
            if kept:
                os.environ["PREFECT_API_URL"] = kept["url"]
    skip_ca_bundle_for_http_api()
    if "prefect.context" in sys.modules:  # imported already (a command in the warm process): read them again
        sys.modules["prefect.context"].refresh_global_settings_context()


# A flow's ``persist_result``: what our flows return is their summary, recorded in the catalog's runs
# (``recorded_run``); Prefect keeps no copy. Left unset, Prefect works that out at every run by asking the server for
# a default result storage block (24 ms of a command), to then persist nothing.
RESULTS_IN_THE_CATALOG = False


@contextmanager
def at_the_terminal(settings: Settings) -> Iterator[None]:
    """Flows run inside the block are a command's, run where the user watches it: they send Prefect heartbeats only
    as ``[prefect] command_heartbeat_s`` asks (none by default: see that setting for what they cost).
    Prefect's settings with that one value changed, copied: ``temporary_settings`` validates the whole settings
    again, reading every source anew (49 ms of a command on a loaded machine); ours validated the value already,
    with Prefect's bounds."""
    from prefect.context import SettingsContext, get_settings_context

    context = get_settings_context()
    flows = context.settings.flows.model_copy(update={"heartbeat_frequency": settings.prefect.command_heartbeat_s})
    with SettingsContext(profile=context.profile, settings=context.settings.model_copy(update={"flows": flows})):
        yield


def current_flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    run_id = flow_run.id
    return str(run_id) if run_id else None


def recorded_run(function: F | None = None, *, name: Callable[[dict[str, Any]], str] | None = None) -> Any:
    """Record a flow in the catalog's runs: its parameters when it starts, its summary (what it returns) or its
    error when it ends, the run that started it (a subflow of the main job) and the deployment it came from (a
    scheduled or triggered run). Goes under ``@flow``; the flow's ``settings`` parameter is resolved here once, so
    the body gets the same settings the record was written with. ``name`` gives the recorded flow name from the
    arguments (the generic build flow records ``build-<benchmark>``)."""
    if function is None:
        return lambda decorated: recorded_run(decorated, name=name)
    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> dict[str, Any]:
        from prefect.runtime import flow_run

        from schemas import code_version
        from schemas.config import load_settings
        from storage import open_storage

        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        settings = bound.arguments["settings"] = bound.arguments.get("settings") or load_settings()
        catalog = open_storage(settings).catalog
        run_id = current_flow_run_id() or f"local-{uuid.uuid4().hex[:12]}"
        parent = flow_run.parent_flow_run_id
        params = {key: value for key, value in bound.arguments.items() if key != "settings"}
        flow_name = name(params) if name else flow_run.flow_name or function.__name__
        catalog.start_run(run_id, flow_name, params, code_version(),
                          parent_run_id=str(parent) if parent else None, deployment=deployment_name())
        try:
            summary = function(*bound.args, **bound.kwargs)
        except BaseException as error:
            catalog.finish_run(run_id, "failed", {"error": repr(error)})
            raise
        catalog.finish_run(run_id, "completed", summary)
        return summary

    return wrapper


def deployment_name() -> str | None:
    """The name of the deployment the running flow came from, as Prefect tells it; None at once for a flow a command
    started (no deployment, no parent run, no ``PREFECT__RUNTIME__DEPLOYMENT__*`` override), which Prefect's
    ``runtime.deployment.name`` would first read from the server to find out (56 ms of every command). A subflow
    asks Prefect: a deployment's subflows carry its id in Prefect's context, not on their own run."""
    import os

    from prefect.context import FlowRunContext
    from prefect.runtime import deployment

    context = FlowRunContext.get()
    run = context.flow_run if context is not None else None
    overridden = any(key.startswith("PREFECT__RUNTIME__DEPLOYMENT__") for key in os.environ)
    if run is not None and run.deployment_id is None and run.parent_task_run_id is None and not overridden:
        return None
    return deployment.name
