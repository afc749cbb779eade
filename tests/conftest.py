"""Shared fixtures: a fresh catalog (on DuckDB and on PostgreSQL) and blob store per test, and real S3-speaking and
PostgreSQL servers on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas import BenchmarkItem, Producer, Record, make_record
from storage import Catalog, LocalBlobStore, Storage

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A PostgreSQL server of this test session's own (tests/postgres_server.py); its URL."""
    from tests.postgres_server import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture(params=["duckdb", "postgres"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    """A fresh catalog, once on each backend: the embedded DuckDB file and a database on a PostgreSQL server."""
    if request.param == "duckdb":
        yield Catalog(tmp_path / "catalog.duckdb", lock_timeout_s=30)
        return
    from storage.postgres import PostgresCatalog
    from tests.postgres_server import fresh_database

    catalog = PostgresCatalog(fresh_database(request.getfixturevalue("postgres")), lock_timeout_s=30)
    yield catalog
    catalog.close()


def catalog_settings(catalog: Catalog) -> Any:
    """The [catalog] settings that open ``catalog`` again (its file, or its server's URL)."""
    from schemas.config import CatalogSettings

    url = getattr(catalog, "url", None)
    return CatalogSettings(url=url) if url else CatalogSettings(path=catalog.path)


def reopened(catalog: Catalog) -> Catalog:
    """The same catalog opened again, as another process would."""
    from storage import open_catalog

    return open_catalog(catalog_settings(catalog))


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


def write_world(folder: Path, tasks: tuple[str, ...] = ("pick_place", "pick_place"),
                size: tuple[int, int] = (160, 120)) -> tuple[Path, dict[str, Any]]:
    """Sample-world episodes (seeds 1, 2, ... of ``tasks``) with a front and a top camera, written into ``folder``;
    (the folder, episode id -> episode)."""
    from tasks.sources.sample_world import generate_episode, write_episode

    episodes = [generate_episode(seed, task) for seed, task in enumerate(tasks, start=1)]
    for episode in episodes:
        write_episode(episode, folder, cameras=("front", "top"), size=size)
    return folder, {e.id: e for e in episodes}


def solid_png(shade: int, size: tuple[int, int] = (24, 16)) -> bytes:
    """A small PNG of one colour; different shades give different images (and different blobs)."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, (shade, 255 - shade, 40)).save(buffer, format="PNG")
    return buffer.getvalue()


def item_record(i: int, *, parents: tuple[str, ...] = (), task: str = "maze", producer: Producer | None = None
                ) -> Record:
    return make_record(BenchmarkItem(task=task, question=f"question {i}", options=["a", "b"], answer=i % 2),
                       benchmark="explore", producer=producer or Producer(task="test"), parents=parents)


def publish_review_items(catalog: Catalog, n: int, queue: str = "recheck") -> list[Record]:
    """``n`` review items in ``queue``, each about its own benchmark item, stored."""
    from schemas import ReviewItem

    items = []
    for i in range(n):
        target = item_record(i)
        item = make_record(ReviewItem(target_id=target.id, queue=queue, question=f"check {i}"),
                           benchmark="explore", producer=Producer(task="test"), parents=[target.id])
        catalog.put_records([target, item])
        items.append(item)
    return items


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Any]:
    """Serves the annotation app with the given [annotation] settings; yields a starter returning (settings, url).
    Every app it started is closed at the end of the test."""
    from annotation_ui.app import serve
    from tests.test_annotation_app import app_settings

    servers = []

    def start(**annotation: Any) -> tuple[Any, str]:
        settings = app_settings(tmp_path / f"app{len(servers)}", **annotation)
        servers.append(serve(settings, block=False))
        return settings, f"http://127.0.0.1:{settings.annotation.port}/"

    yield start
    for blocks in servers:
        blocks.close()
