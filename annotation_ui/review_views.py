"""The review views of the registered benchmarks' queues, which the app draws its queue tabs with: which view a queue
declares, and which view draws a record of a kind (the shared recheck queue's). Gradio-free."""

from __future__ import annotations

from tasks.benchmark import ReviewCheck, ReviewView


def review_views() -> list[tuple[ReviewCheck, ReviewView]]:
    """Every registered benchmark's review queues that declare a view, in registry order (the tabs' order)."""
    from tasks import benchmarks

    found: list[tuple[ReviewCheck, ReviewView]] = []
    for plugin in benchmarks.every():
        for review in plugin.reviews:
            view = review.review_view()
            if view is not None:
                found.append((review, view))
    return found


def view_of(queue: str) -> ReviewView | None:
    return next((view for review, view in review_views() if review.queue == queue), None)


def view_for_kind(kind: str) -> ReviewView | None:
    """The first view (registry order) that declares it draws records of ``kind``; None: no view does."""
    return next((view for _, view in review_views() if kind in view.kinds), None)
