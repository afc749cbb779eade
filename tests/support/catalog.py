"""Records and catalogs the tests make: benchmark items, review items and demos with a frame, and a catalog opened
again as another process would."""

from __future__ import annotations

from typing import Any

from schemas import BenchmarkItem, Producer, Record, make_record
from storage import Catalog, Storage
from tasks.progress.payloads import Demo


def catalog_settings(catalog: Catalog) -> Any:
    """The [catalog] settings that open ``catalog`` again (its file, or its server's URL)."""
    from schemas.config import CatalogSettings

    url = getattr(catalog, "url", None)
    return CatalogSettings(url=url) if url else CatalogSettings(path=catalog.path)


def reopened(catalog: Catalog) -> Catalog:
    """The same catalog opened again, as another process would."""
    from storage import open_catalog

    return open_catalog(catalog_settings(catalog))


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


def demo_with_frame(storage: Storage, i: int) -> Record:
    """A visual PROGRESS-BENCH demo of one frame (a blob of its own), not yet stored."""
    ref = storage.put_blob(f"jpeg bytes {i}".encode(), role="frame_0", media_type="image/jpeg")
    payload = Demo(trajectory_id=f"traj-{i}", modality="visual", task_goal="stack the cups", steps=[f"f{i}.jpg"],
                   total_steps=1, data_source="robomind")
    return make_record(payload, benchmark="progress", producer=Producer(task="test"), blobs=[ref])
