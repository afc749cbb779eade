"""Releasing what people accepted, and publishing a release in a benchmark's own format: the two steps every
benchmark whose records are reviewed one by one declares as ``freeze`` and ``publish``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from schemas import Status
from schemas.config import Settings
from storage import open_storage


def freeze_accepted(settings: Settings, prefix: str, params: dict[str, Any], *, benchmark: str, kind: str,
                    subset: str) -> list[str]:
    """``<prefix>-<benchmark>``: the ``kind`` records people accepted, a new version only when they changed."""
    from schemas.releases import ReleaseSelection
    from storage.releases import create_release

    storage = open_storage(settings)
    accepted = storage.catalog.find_records(kind=kind, benchmark=benchmark, status=Status.ACCEPTED)
    if not accepted:
        return []
    selection = ReleaseSelection(benchmarks=(benchmark,), kinds=(kind,),
                                 only_ids=tuple(sorted(r.id for r in accepted)), subset=subset)
    return [create_release(storage.catalog, storage.blobs, f"{prefix}-{benchmark}", selection=selection,
                           params=params, only_if_changed=True).tag]


def freeze_fresh(settings: Settings, prefix: str, params: dict[str, Any], *, benchmark: str, kind: str,
                 subset: str, keys_of: Callable[[Any], Any],
                 describe: Callable[[Any], dict[str, float]] | None = None,
                 solve: Callable[[Any, Callable[[str], bytes]], dict[str, bool]] | None = None) -> list[str]:
    """``<prefix>-<benchmark>`` as a fresh version: the accepted ``kind`` records that are in no earlier version of
    it and repeat none of their instances (``tasks.novelty``: same content, a near-duplicate image or text), and the
    screen's counts in the release's params (``novelty``); with ``describe`` (the benchmark's difficulty
    descriptors) and ``solve`` (its reference solvers), how hard it is against the newest earlier version
    (``difficulty``, ``tasks.hardness``); nothing when no record is fresh."""
    from schemas.releases import ReleaseSelection
    from storage.releases import create_release
    from tasks.novelty import IMAGE_BITS, TEXT_SIMILARITY, Screen

    storage = open_storage(settings)
    name = f"{prefix}-{benchmark}"
    earlier = _released_ids(storage.catalog, name)
    accepted = [r for r in storage.catalog.find_records(kind=kind, benchmark=benchmark, status=Status.ACCEPTED)
                if r.id not in earlier]
    if not accepted:
        return []
    screen = Screen(storage.blobs.get, text_embedder(settings))
    compared = screen.add_all((r.id, keys_of(r)) for r in storage.catalog.get_records(sorted(earlier)))
    screened = screen.screen(((r, keys_of(r)) for r in sorted(accepted, key=lambda r: r.id)), lambda r: r.id)
    screened.compared_with = compared
    if not screened.admitted:
        return []
    fresh, resampled = screened.admitted, None
    if describe is not None and earlier and settings.release.match_difficulty:
        fresh, resampled = _difficulty_matched(storage, name, fresh, describe, settings.release.min_kept_share)
    selection = ReleaseSelection(benchmarks=(benchmark,), kinds=(kind,),
                                 only_ids=tuple(sorted(r.id for r in fresh)),
                                 subset=f"{subset}, in no earlier version of {name}")
    novelty = {**screened.counts(), "image bits": IMAGE_BITS,
               "text similarity": TEXT_SIMILARITY,
               "overlaps": [overlap.__dict__ for overlap in screened.overlaps[:100]]}
    made = {**params, "novelty": novelty}
    if describe is not None and earlier:
        made["difficulty"] = _difficulty_against_last(storage, name, fresh, describe, solve)
        if resampled:
            made["difficulty"]["resampled"] = resampled
    return [create_release(storage.catalog, storage.blobs, name, selection=selection, params=made,
                           only_if_changed=True).tag]


def _last_version(storage: Any, name: str, kinds: set[str]) -> tuple[str, list[Any]]:
    """The tag of the newest version of ``name`` and its records of ``kinds``."""
    from storage.releases import load_release

    last = load_release(storage.catalog, name)
    return last.tag, storage.catalog.get_records([entry.id for entry in last.records if entry.kind in kinds])


def _difficulty_against_last(storage: Any, name: str, fresh: list[Any], describe: Callable[[Any], Any],
                             solve: Callable[[Any, Callable[[str], bytes]], dict[str, bool]] | None
                             ) -> dict[str, Any]:
    """The fresh records against those of the newest version of ``name``: descriptors and solvers."""
    from tasks.hardness import hardness_report

    tag, before = _last_version(storage, name, {record.kind for record in fresh})
    return {"against": tag, **hardness_report(before, fresh, describe, solve, storage.blobs.get)}


def _difficulty_matched(storage: Any, name: str, fresh: list[Any], describe: Callable[[Any], Any],
                        min_share: float) -> tuple[list[Any], dict[str, Any]]:
    """``fresh`` resampled until it is as hard as the newest version of ``name`` (``[release] match_difficulty``),
    and what the resampling did."""
    from tasks.difficulty import descriptors, matched_subset

    _, before = _last_version(storage, name, {record.kind for record in fresh})
    kept, matched = matched_subset(descriptors(before, describe), fresh, describe, min_share)
    return kept, {"drawn": len(fresh), "kept": len(kept), "left out": len(fresh) - len(kept), "matched": matched,
                  "least share kept": min_share}


def released_screen(storage: Any, *, benchmark: str, kind: str, keys_of: Callable[[Any], Any],
                    image: Callable[[str], bytes] | None = None,
                    embed: Callable[[list[str]], Any] | None = None,
                    id_of: Callable[[Any], str] | None = None, also: Iterable[Any] = ()) -> Any:
    """A novelty screen (``tasks.novelty.Screen``) holding every released ``kind`` instance of ``benchmark``, of every
    version of every release: what a generator's new draws are screened against, so a repeat is drawn again instead
    of being built and then left out of the release. ``image`` reads an image by sha256 (default: the blob store;
    a generator passes one that also knows the images it has not stored yet); ``embed`` embeds texts (default: none
    compared; ``text_embedder(settings)`` the embedder role's); ``id_of`` names an instance in the screen (default:
    its record id; a generator that knows its draws by another name before they are records passes that); ``also``:
    records no release holds yet (earlier draws waiting for people), screened against as unreleased: a later draw
    of their group is their sibling, not their repeat."""
    from tasks.novelty import Screen

    ids = {entry.id for entry in _released_entries(storage.catalog)
           if entry.kind == kind and entry.benchmark == benchmark}
    name = id_of or _record_id
    screen = Screen(image or storage.blobs.get, embed)
    screen.add_all((name(record), keys_of(record)) for record in storage.catalog.get_records(sorted(ids)))
    screen.add_all(((name(record), keys_of(record)) for record in also if record.id not in ids), released=False)
    return screen


def _record_id(record: Any) -> str:
    return record.id


def _released_ids(catalog: Any, name: str) -> set[str]:
    """The record ids of every version of release ``name``."""
    return {entry.id for entry in _released_entries(catalog, name)}


def _released_entries(catalog: Any, name: str | None = None) -> list[Any]:
    """The entries of every version of release ``name`` (of every release when None)."""
    from storage.releases import list_releases, load_release

    return [entry for n, version, *_ in list_releases(catalog) if name is None or n == name
            for entry in load_release(catalog, f"{n}@{version}").records]


def text_embedder(settings: Settings) -> Callable[[list[str]], Any] | None:
    """The embedder role's ``embed`` for the text screen, loaded only when a text is compared."""
    from tasks.models.registry import has_backend, load_backend

    if not has_backend(settings, "embedder"):
        return None
    loaded: list[Any] = []

    def embed(texts: list[str]) -> Any:
        if not loaded:
            loaded.append(load_backend(settings, "embedder"))
        return loaded[0].embed(texts)

    return embed


def publish_in_format(settings: Settings, tag: str, *, fmt: str, title: str,
                      exporter: Callable[[Any, Any, str, Path], dict[str, int]]) -> dict[str, Any]:
    """The release exported by ``exporter`` beside the other exports, as ``<name>-v<version>-<fmt>``."""
    from storage.releases import load_release

    storage = open_storage(settings)
    manifest = load_release(storage.catalog, tag)
    target = Path(settings.export.folder) / f"{manifest.name}-v{manifest.version}-{fmt}"
    written = exporter(storage.catalog, storage.blobs, tag, target)
    return {f"{fmt} format": {"folder": str(target), **written}, "notes": [f"{title} format: {target}"]}
