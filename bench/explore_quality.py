"""Quality of EXPLORE-Bench's offline scene annotation against the sample world's true final scenes.

    python bench/explore_quality.py [--clips 40] [--workers 2]

Renders sample-world activities filmed by the head camera, extracts instances, annotates each final scene with the
offline backends (classic tagger and detector, rule-based tag filter with sentence embeddings, attributes from
pixels, relations from boxes, guideline correction), and prints object and relation precision and recall against
the true final state, per task type and overall, with the time per instance. The same figures are stored on every
EXPLORE release built from the sample world (``quality_vs_sample_truth`` in its params).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from schemas import Producer
from schemas.config import Settings
from storage import Catalog, LocalBlobStore, Storage
from tasks.explore.construct import Annotators, annotate_instance, build_clip
from tasks.explore.instances import QualityThresholds, SubsetBounds
from tasks.explore.payloads import SceneObject
from tasks.explore.quality import scene_quality, summarise
from tasks.models.registry import load_backend
from tasks.sources.ego_clips import iter_clips
from tasks.sources.sample_world import generate_episode, write_episode

TASKS = ("gather", "swap")  # the sample activities long enough for the Short subset


def _render(args: tuple[int, str]) -> None:
    index, folder = args
    write_episode(generate_episode(1000 + index, TASKS[index % len(TASKS)]), Path(folder), cameras=("ego",),
                  size=(640, 480))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clips", type=int, default=40, help="sample activities rendered and annotated")
    parser.add_argument("--workers", type=int, default=2, help="processes rendering the clips")
    args = parser.parse_args()
    settings = Settings()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ego"
        start = time.perf_counter()
        with ProcessPoolExecutor(args.workers) as pool:
            list(pool.map(_render, [(i, str(folder)) for i in range(args.clips)]))
        render_s = time.perf_counter() - start
        storage = Storage(Catalog(Path(tmp) / "catalog.duckdb"), LocalBlobStore(Path(tmp) / "blobs"))
        annotators = Annotators(load_backend(settings, "tagger"), load_backend(settings, "detector"),
                                load_backend(settings, "embedder"), None, settings.nlp.spacy_model)
        per_task: dict[str, list[dict[str, float]]] = {}
        rejected: list[str] = []
        start = time.perf_counter()
        for locator, load in iter_clips(folder, "sample"):
            built = build_clip(load, locator, storage, Producer(task="bench"), bounds=SubsetBounds(),
                               quality=QualityThresholds())
            if built.quarantined:
                rejected.append(built.quarantined[0].status_reason)
                continue
            trajectory, instance = built.records
            final = next(b for b in instance.blobs if b.role == "final")
            annotated = annotate_instance(instance, storage.blobs.get(final.sha256), annotators, Producer(task="b"))
            scene = next(r for r in annotated.records if r.kind == "scene" and r.payload["stage"] == "corrected")
            objects = [SceneObject.model_validate(o) for o in scene.payload["objects"]]
            task = trajectory.payload["source_id"].split("-")[1]
            per_task.setdefault(task, []).append(scene_quality(objects, trajectory.payload["meta"]["truth"]))
        annotate_s = time.perf_counter() - start
    done = sum(len(v) for v in per_task.values())
    print(f"clips rendered                 {args.clips:>8}  ({render_s:.1f} s, {args.workers} processes)")
    print(f"instances annotated            {done:>8}  ({annotate_s / max(done, 1):.2f} s each, extraction included)")
    print(f"clips rejected by the checks   {len(rejected):>8}")
    for reason in rejected[:5]:
        print(f"  {reason}")
    print(f"{'':31}{'objects P':>10}{'objects R':>10}{'relations P':>12}{'relations R':>12}")
    rows = {**{task: summarise(figures) for task, figures in sorted(per_task.items())},
            "all": summarise([q for figures in per_task.values() for q in figures])}
    for name, summary in rows.items():
        precision = f"{summary['relation_precision']:.2f}" if summary["relations"] else "n/a"
        recall = f"{summary['relation_recall']:.2f}" if summary["true_relations"] else "n/a"
        print(f"{name:<31}{summary['object_precision']:>10.2f}{summary['object_recall']:>10.2f}"
              f"{precision:>12}{recall:>12}  ({summary['true_relations']:.0f} true relations)")


if __name__ == "__main__":
    main()
