"""What the evaluation engine (``tasks/evaluate``) asks a benchmark, with the answers most benchmarks give.

A benchmark's evaluation subclasses ``Evaluation`` and writes only what differs: its items (``item_kind`` and
``item``, the one converter from a released record), its prompt (``messages``), how a reply reads (``parse``), how
a run scores (``score``), its baselines and its report. One request per item, no options of its own, the strategy
as the variant name, the record id as the only key, and no extra report parts are the defaults; an agent loop says
``rounds``, ``finished`` and ``parse_conversation``. Part of the benchmark contract (``tasks.benchmark``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import random

    from schemas.config import Settings
    from schemas.releases import ReleaseManifest
    from tasks.evaluate.answerers import Request
    from tasks.evaluate.run import EvalSettings, Parsed
    from tasks.evaluate.scoring import Scoring
    from tasks.models.base import Generation, Message


class Evaluation:
    """Items are the benchmark's own frozen dataclasses; each has at least ``key`` (the record id it is scored
    against) and ``missing`` (why it cannot be shown to a model; empty when it can)."""

    title: str = "this benchmark"  # as messages name it: the plugin sets its own when it makes the evaluation
    # the record kind a released item is: ``holds_items`` and ``items`` read it, the default freeze releases it
    item_kind: ClassVar[str] = ""
    strategies: ClassVar[tuple[str, ...]] = ("direct",)
    default_strategy: ClassVar[str] = "direct"
    generation: ClassVar[Generation]  # the paper's decoding settings
    prompt_version: ClassVar[str]
    percent_metrics: ClassVar[bool] = False  # the leaderboard shows its metrics as percentages
    metric_order: ClassVar[tuple[str, ...]] = ()  # its headline metrics in the paper's order (tables, leaderboard)
    # how its headline metrics read (the leaderboard's tables and charts say it beside each): those the smaller
    # the better (errors), those best at 0 (a signed gap); every other one the higher the better
    lower_is_better: ClassVar[tuple[str, ...]] = ()
    best_at_zero: ClassVar[tuple[str, ...]] = ()

    # -- items -------------------------------------------------------------------------------------------------

    def holds_items(self, manifest: ReleaseManifest) -> bool:
        return any(entry.kind == self.item_kind for entry in manifest.records)

    def items(self, catalog: Any, manifest: ReleaseManifest, images: Callable[[str], bytes] | None = None
              ) -> list[Any]:
        """Its items of the release, in ``order``; ``images`` (sha256 -> bytes) for items that need theirs when
        scored."""
        records = catalog.get_records([e.id for e in manifest.records if e.kind == self.item_kind])
        return sorted((self.item(record, images) for record in records), key=self.order)

    def item(self, record: Any, images: Callable[[str], bytes] | None) -> Any:
        """The item a released record of ``item_kind`` is."""
        raise NotImplementedError(f"{type(self).__name__} reads no {self.item_kind or 'item'} record")

    def order(self, item: Any) -> Any:
        """Where an item comes among the release's (predictions and reports list them so): by record id."""
        return item.key

    def item_name(self, item: Any) -> str:
        """How a person finds the item in a message."""
        return f"{self.item_kind.replace('_', ' ') or 'item'} {item.key[:12]}"

    def aliases(self, item: Any) -> list[str]:
        """Every key an answer file may use for the item, its record id first."""
        return [item.key]

    def official_key(self, item: Any) -> str | None:
        """The identifier the benchmark's own files give the item (an imported row's official key, the id our
        export writes for a generated one), shown beside every prediction and in every report; None when it has
        none."""
        return None

    # -- options -----------------------------------------------------------------------------------------------

    def options(self, settings: Settings, options: dict[str, Any]) -> dict[str, Any]:
        """The evaluation options with what this benchmark adds from the configuration."""
        return options

    def run_options(self, strategy: str, options: dict[str, Any]) -> dict[str, Any]:
        """Its evaluation options as a run under ``strategy`` uses them (``EvalSettings.options``, part of the run
        key): defaults filled in, a None value meaning not given. A name it does not know, or a value or
        combination that does not go with the strategy, is a ValueError."""
        given = sorted(name for name, value in options.items() if value is not None)
        if given:
            raise ValueError(f"{self.title} has no evaluation option ({', '.join(given)})")
        return {}

    def variant(self, settings: EvalSettings) -> str:
        """The strategy with its options as predictions and reports name it (``multi-turn:window=10``)."""
        return settings.strategy

    # -- asking ------------------------------------------------------------------------------------------------

    def rounds(self, item: Any, settings: EvalSettings) -> int:
        """Requests the item takes under the strategy at most (one per turn)."""
        return 1

    def messages(self, item: Any, settings: EvalSettings, image: Callable[[str], bytes], turn: int,
                 previous: list[str]) -> tuple[list[Message], int]:
        """The request of one round, given the replies of the earlier rounds, and how many answers (scenes,
        scores) it asks for. An agent loop replays ``previous`` through its simulator to show the new state."""
        raise NotImplementedError

    def finished(self, item: Any, settings: EvalSettings, replies: list[str]) -> bool:
        """Whether an item needs no further round before ``rounds`` is reached (an agent gave its final answer);
        by default every round of a strategy is asked."""
        return False

    # -- reading answers ---------------------------------------------------------------------------------------

    def parse(self, item: Any, text: str, settings: EvalSettings | None) -> tuple[dict[str, Any], bool]:
        """The value a reply gives, and whether it could be read."""
        raise NotImplementedError

    def answer_in_row(self, row: dict[str, Any]) -> tuple[str, Any] | None:
        """The (key, answer) of a row of the benchmark's own harness's answer files, as its official evaluation reads
        it; None when the row is not one (``evaluate --predictions`` then reads ``key`` and ``answer``)."""
        return None

    def parse_conversation(self, item: Any, replies: list[str], settings: EvalSettings
                           ) -> tuple[dict[str, Any], bool]:
        """The value of a whole conversation (every round's reply, the last one final): an agent loop replays
        its actions; a one-answer strategy reads the last reply with ``parse``."""
        return self.parse(item, replies[-1], settings)

    def judge_prompt(self, item: Any, answer: str) -> str:
        """What a judge model is asked when a reply cannot be read: its answer restated in the asked format."""
        return ("Rewrite the final answer of the reply below in the exact format its question asked for, changing "
                f"nothing of its content; write nothing else.\n\nReply:\n{answer[-8000:]}")

    def parse_judged(self, item: Any, reply: str) -> tuple[dict[str, Any], bool]:
        return self.parse(item, reply, None)

    # -- scoring and reports -----------------------------------------------------------------------------------

    def score(self, settings: Settings, eval_settings: EvalSettings, items: list[Any],
              parsed: dict[str, Parsed], catalog: Any) -> Scoring:
        raise NotImplementedError

    def report_tables(self, scoring: Scoring, label: str) -> str:
        """The report's Markdown tables: by default the headline figures, one row for the model."""
        names = list(scoring.headline)
        cells = ["n/a" if scoring.headline[n] is None else f"{scoring.headline[n]:.4g}" for n in names]
        return "\n".join([f"| model | {' | '.join(names)} |", "|---|" + "---:|" * len(names),
                          f"| {label} | {' | '.join(cells)} |"])

    def report_plots(self, scoring: Scoring, folder: Path, label: str) -> list[Path]:
        return []

    def leaderboard_plots(self, runs: list[Any], catalog: Any, folder: Path) -> list[Path]:
        """What ``benchwright leaderboard --out`` draws of this benchmark's runs (``evaluation`` records) besides
        their headline metrics."""
        return []

    def report_summary(self, eval_settings: EvalSettings) -> list[tuple[str, str]]:
        """Lines of the report's summary that say how this benchmark scored."""
        return []

    # -- baselines ---------------------------------------------------------------------------------------------

    def baseline_answer(self, baseline: str, options: dict[str, Any], request: Request, rng: random.Random,
                        vocabulary: list[str]) -> str:
        """A model-free answer (random, constant, noisy oracle) in the format the strategy asks for."""
        raise NotImplementedError(f"{self.title} has no baseline {baseline!r}")

    def baseline_vocabulary(self, items: list[Any]) -> list[str]:
        return []
