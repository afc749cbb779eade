"""Shared fixtures: a fresh catalog (on DuckDB and on PostgreSQL) and blob store per test, settings over a temporary
folder, real S3-speaking and PostgreSQL servers on 127.0.0.1, the annotation app served on a clock the test moves,
the CLI's project folder, and the evaluation harnesses users bring (lmms-eval, VLMEvalKit) installed from PyPI for
the tests that run them. The helpers they use, and the tests' other helpers, are in tests/support/."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas.config import BlobSettings, CatalogSettings, ExportSettings, Settings
from storage import Catalog, LocalBlobStore, Storage

# pytest rewrites the asserts of test modules only: the helpers' asserts, in the packages below (tests/support/ and
# each benchmark's folder), say what they compared too
pytest.register_assert_rewrite(*(f"tests.{p.name}" for p in sorted(Path(__file__).parent.iterdir())
                                 if (p / "__init__.py").is_file()))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A PostgreSQL server of this test session's own (tests/support/postgres_server.py); its URL."""
    from tests.support.postgres_server import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture
def postgres_database(postgres: str) -> Iterator[str]:
    """A new database on the session's PostgreSQL server, dropped when the test ends; its URL."""
    from tests.support.postgres_server import database_on

    with database_on(postgres) as url:
        yield url


@pytest.fixture(params=["duckdb", "postgres"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    """A fresh catalog, once on each backend: the embedded DuckDB file and a database on a PostgreSQL server."""
    if request.param == "duckdb":
        yield Catalog(tmp_path / "catalog.duckdb", lock_timeout_s=30)
        return
    from storage.postgres import PostgresCatalog

    catalog = PostgresCatalog(request.getfixturevalue("postgres_database"), lock_timeout_s=30)
    yield catalog
    catalog.close()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings whose catalog, blobs and exports are in the test's temporary folder."""
    return Settings(catalog=CatalogSettings(path=tmp_path / "catalog.duckdb"),
                    blobs=BlobSettings(uri=f"file://{tmp_path}/blobs"), export=ExportSettings(folder=tmp_path / "exp"))


@pytest.fixture
def blob_store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs")


@pytest.fixture
def storage(catalog: Catalog, blob_store: LocalBlobStore) -> Storage:
    return Storage(catalog=catalog, blobs=blob_store)


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto in server mode: boto3 talks real HTTP to it, as it would to MinIO or AWS."""
    from moto.server import ThreadedMotoServer

    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        os.environ.setdefault(name, value)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Any]:
    """Serves the annotation app with the given [annotation] settings; yields a starter returning (settings, url).
    Every app it started is closed at the end of the test."""
    from annotation_ui.app import serve
    from tests.support.app import app_settings

    servers = []

    def start(**annotation: Any) -> tuple[Any, str]:
        settings = app_settings(tmp_path / f"app{len(servers)}", **annotation)
        servers.append(serve(settings, block=False))
        return settings, f"http://127.0.0.1:{settings.annotation.port}/"

    yield start
    for blocks in servers:
        blocks.close()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The clock of every app started in the test (its limiter's waits and its lockouts): a
    ``tests.support.app.Clock`` that moves only when told."""
    import functools

    from annotation_ui import service
    from annotation_ui.limits import LockoutStore, LoginLimiter
    from tests.support.app import Clock

    moved = Clock()
    monkeypatch.setattr(service, "LoginLimiter", functools.partial(LoginLimiter, clock=moved.monotonic))
    monkeypatch.setattr(service, "LockoutStore", functools.partial(LockoutStore, clock=moved.wall))
    return moved


@pytest.fixture
def fixed_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's consoles at 200 columns, whatever terminal runs the suite (``tests.support.cli.pin_console_width``);
    a module asks for it with ``pytestmark = pytest.mark.usefixtures("fixed_width")``."""
    from tests.support.cli import pin_console_width

    pin_console_width(monkeypatch)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Storage, Any, Any]:
    """The test's temporary folder as a project the CLI runs in (``tests.support.cli.make_project``): (storage, an
    accepted demo, an item derived from it)."""
    from tests.support.cli import make_project

    return make_project(tmp_path, monkeypatch)


@pytest.fixture(scope="session")
def lmms_eval_harness() -> Path:
    """lmms-eval 0.7.3 installed for the harness tests (``tests.support.harnesses``: from PyPI into
    ``.cache/harness/`` the first time, then found there); the folder to put on a subprocess's ``PYTHONPATH``. An
    install that fails is an error of every test that needs it, never a skip."""
    from tests.support.harnesses import LMMS_EVAL, installed

    return installed("lmms-eval", LMMS_EVAL)


@pytest.fixture(scope="session")
def vlmevalkit_harness() -> Path:
    """VLMEvalKit (PyPI: ms-vlmeval 0.0.20) installed for the harness tests, as ``lmms_eval_harness``."""
    from tests.support.harnesses import VLMEVALKIT, installed

    return installed("vlmevalkit", VLMEVALKIT)
