"""How a benchmark's review queues are checked and drawn: the annotation app's one generic tab reads these
declarations and knows nothing of what an item is (part of the benchmark contract, ``tasks.benchmark``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from schemas.registry import absolute, load_target

if TYPE_CHECKING:
    from schemas.config import Settings


@dataclass(frozen=True)
class ReviewCheck:
    """A review queue a benchmark owns, with the check a person's correction must pass before it is saved, and
    how the annotation app shows its items (``view``)."""

    queue: str
    verdicts: tuple[str, ...]
    correction_problems: Callable[[dict[str, Any], Settings], list[str]] | None = None
    # "module:attr" of its ReviewView: a string, so the plugin module stays light (the view imports what it
    # draws with only when the annotation app is built); None: people answer it through the API only
    view: str | None = None

    def review_view(self) -> ReviewView | None:
        return load_target(self.view) if self.view else None

    def in_package(self, package: str) -> ReviewCheck:
        """The queue with its view's "module:attr" name taken inside ``package`` when it starts with "."."""
        return replace(self, view=absolute(self.view, package))


@dataclass(frozen=True)
class Picture:
    """An image a review view shows, as stored (full resolution); ``boxes``: label -> [x0, y0, x1, y1] in image
    pixels, drawn labelled on it."""

    caption: str
    data: bytes
    boxes: dict[str, Any] | None = None


ReviewItemView = dict[str, Any]  # what ``App.take`` gives: item_id, queue, question, suggestion, target, images...
ImageLoader = Callable[[str | None], bytes | None]  # blob sha256 -> its bytes


@dataclass(frozen=True)
class ReviewTable:
    """An editable table of a review view; what a person changes in it is their correction (verdict
    ``correct``), checked by the queue's ``correction_problems`` before it is saved."""

    columns: tuple[str, ...]
    rows: Callable[[ReviewItemView], list[list[str]]]  # the rows an item shows
    # (rows now, rows shown) -> the correction to save, None while the table says what was shown
    correction: Callable[[Any, Any], dict[str, Any] | None]
    label: str = ""
    fixed_columns: tuple[int, ...] = ()  # not editable (an id the app keeps)


@dataclass(frozen=True)
class ReviewView:
    """How the annotation app's one generic tab shows a queue's items: declared by the benchmark, drawn by the
    app, which knows nothing of what an item is."""

    title: str  # the tab's
    instructions: str  # Markdown: what the answers (and the table's columns) mean
    buttons: tuple[tuple[str, str], ...]  # (verdict, label), in the order shown; the first is the primary one
    # (item view, image loader) -> (HTML above the images, the images); the HTML escapes what comes from data
    render: Callable[[ReviewItemView, ImageLoader], tuple[str, list[Picture]]]
    # (item view, catalog) -> the item view with what this queue shows besides the item and its target (another
    # record's image, an instance's actions)
    gather: Callable[[ReviewItemView, Any], ReviewItemView] | None = None
    table: ReviewTable | None = None
    # the record kinds it can draw wherever they are reviewed: the shared recheck queue draws a released record with
    # the view declaring its kind (shared screens: ``tasks.review_screen``)
    kinds: tuple[str, ...] = ()
