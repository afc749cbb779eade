"""Which of a ViC-Bench task's draws are kept, wherever they were made: a plan's specs in order (``DrawPlan``), what
each gave (``Drawn``), and the first ``count`` instances in spec order, each signature once (``Taking``), so one
worker and four keep the same ones (see ``tasks.vic.drawing`` for a build's worker side)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from tasks.vic.task import VicInstance, VicTask

T = TypeVar("T")


@dataclass(frozen=True)
class DrawPlan:
    """How a task draws ``count`` instances for a seed, made cheaply where the build runs: ``specs`` in the order
    the draws are taken, each fixing one draw by itself (an index, an attempt, a pool image, a maze and its letters),
    and ``settings``, what every draw reads; both go to worker processes, so they pickle. ``rejected``: the inputs
    the plan could not use (a task's ``rejected`` entries)."""

    specs: Sequence[Any]
    settings: Any
    rejected: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Drawn:
    """What one spec gave: an instance, a refused input ((locator, reason): an image that makes no puzzle), or
    neither (an attempt that came to nothing). Of the instances with one ``signature``, only the first is taken."""

    instance: VicInstance | None = None
    signature: Hashable | None = None
    refused: tuple[str, str] | None = None


@dataclass
class Taking(Generic[T]):
    """The draws a round keeps, offered in spec order: the first ``count`` instances, each signature once, and the
    refused inputs met before they were complete (after that the draws are not taken, as a loop over the specs
    would have stopped)."""

    count: int
    refused: list[Any] = field(default_factory=list)
    taken: list[T] = field(default_factory=list)
    seen: set[Hashable] = field(default_factory=set)

    @property
    def missing(self) -> int:
        return self.count - len(self.taken)

    def offer(self, drawn: Drawn, kept: T) -> None:
        if not self.missing:
            return
        if drawn.refused is not None:
            self.refused.append(drawn.refused)
        elif drawn.instance is not None and drawn.signature not in self.seen:
            if drawn.signature is not None:
                self.seen.add(drawn.signature)
            self.taken.append(kept)

    def take_all(self, offered: Iterable[tuple[Drawn, T]]) -> None:
        for drawn, kept in offered:
            self.offer(drawn, kept)

    def topped_up(self, specs: Sequence[Any], position: int,
                  run: Callable[[Sequence[Any]], Iterable[tuple[Drawn, T]]]) -> Taking[T]:
        """Batches of the specs from ``position`` on, each as long as instances are missing, until none is."""
        while self.missing and position < len(specs):
            batch = specs[position:position + self.missing]
            position += len(batch)
            self.take_all(run(batch))
        return self


def drawn_here(chosen: VicTask, count: int, seed: int, options: dict[str, Any]
               ) -> tuple[list[VicInstance], list[Any]]:
    """``count`` instances of a task drawn in this process, and the inputs it could not use (``VicTask.generate``)."""
    plan = chosen.plan(count, seed, options)

    def run(batch: Sequence[Any]) -> Iterator[tuple[Drawn, VicInstance | None]]:
        return ((drawn, drawn.instance) for drawn in chosen.draws(batch, plan.settings))

    taking: Taking[VicInstance | None] = Taking(count, refused=list(plan.rejected)).topped_up(plan.specs, 0, run)
    return [instance for instance in taking.taken if instance is not None], taking.refused
