"""EXPLORE-Bench scenes made from sample-world clips the way its build does: instances cut from each clip and
annotated offline (tagger, detector, spaCy), each scene sent to people for correction."""

from __future__ import annotations

from schemas import Producer
from schemas.config import Settings
from tasks.explore.construct import Annotators, annotate_instance, build_clip
from tasks.explore.instances import QualityThresholds, SubsetBounds
from tasks.models.vision import ClassicDetector, ClassicTagger
from tasks.sources.ego_clips import iter_clips

SPACY = Settings().nlp.spacy_model
PRODUCER = Producer(task="annotate-explore", backend="offline")


def build_scenes(clips, storage, middle_frames=0):
    """The clips in the folder ``clips`` built into instances and annotated offline; (instances, quarantined)."""
    extract = Producer(task="extract-explore", params={"folder": str(clips)})
    annotators = Annotators(ClassicTagger(), ClassicDetector(), None, None, SPACY)
    instances, quarantined = [], []
    for locator, load in iter_clips(clips, "sample"):
        built = build_clip(load, locator, storage, extract, bounds=SubsetBounds(), quality=QualityThresholds(),
                           middle_frames=middle_frames)
        storage.catalog.put_records(built.records + built.quarantined)
        quarantined += built.quarantined
        instances += [r for r in built.records if r.kind == "explore_instance"]
    for instance in instances:
        final = next(b for b in instance.blobs if b.role == "final")
        built = annotate_instance(instance, storage.blobs.get(final.sha256), annotators, PRODUCER)
        storage.catalog.put_records(built.records + built.quarantined)
    return instances, quarantined
