"""The [webplan] section of benchwright.toml."""

from __future__ import annotations

from pydantic import Field, field_validator

from schemas.config import Section, known
from tasks.webplan.instance import TESTS


class WebplanSettings(Section):
    tests: tuple[str, ...] = TESTS
    seed: int = 0
    # The paper's counts (Tab. 10), what `benchwright build webplan` and the scheduled deployment build; the main
    # job's sample builds a few of each. Edge cases and future-state pairs are spread evenly over the three form
    # tasks (future-state also over the two horizons and Yes/No).
    edge_count: int = Field(1530, ge=1)
    future_count: int = Field(7196, ge=1)  # 3,358 short + 3,838 long
    # episodes per MiniWob++ task the scripted experts record for temporal ordering and real-web plans: enough for
    # realweb_count shuffle questions (the scarcer strategy: 98 of 318 trajectories gave one; three of the eight
    # experts' tasks almost never run 4-10 actions, and a plan that repeats an action has no distinct shuffles), so
    # 1,600 trajectories give about 490; temporal ordering then asks about 1,600 pairs (the paper: 1,009 MM-M2W +
    # 2,371 GUIAct pairs)
    miniwob_episodes: int = Field(200, ge=1)
    realweb_max_actions: int = Field(10, ge=4)  # Sec. 5.1: trajectories of more actions are dropped
    # plan-assessment questions per distractor strategy (Sec. 5.1, Tab. 10: 435 each); the trajectories are taken in
    # record-id order (a content hash: no task first) until each strategy has this many confirmed
    realweb_count: int = Field(435, ge=1)
    # Fig. 26d perturbs the three shuffled distractors; Sec. 5.1's prose perturbs the original order
    semantic_base: str = Field("shuffled", pattern="^(shuffled|original)$")
    option_count: int = Field(4, ge=3, le=5)  # edge-case plans per question (App. G mentions 4 or 5)
    # how actions are put in plain words: auto (the chat role when [models.chat] is configured), chat, template
    paraphrase: str = Field("auto", pattern="^(auto|chat|template)$")
    chrome_binary: str | None = None  # default: $MINIWOB_CHROME_BINARY, else chromium on the PATH
    chromedriver: str | None = None  # default: $MINIWOB_CHROMEDRIVER, else chromedriver on the PATH
    screenshot_scale: int = Field(2, ge=1, le=4)  # device pixels per CSS pixel (MiniWob++ pages are 160 px wide)
    # headless Chromiums a build carries its episodes out in at once, each reused for episode after episode
    # (tasks/webplan/pool.py); the instances are the same whatever the number. 2: in the paper-size build on a quiet
    # 2-core machine two recorded 144 expert episodes a minute against one's 79 (bench/webplan_build.py --full, README)
    browsers: int = Field(2, ge=1, le=32)

    @field_validator("tests")
    @classmethod
    def _known_tests(cls, tests: tuple[str, ...]) -> tuple[str, ...]:
        return known(tests, TESTS, "web-planning test(s)")
