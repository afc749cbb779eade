"""Complex counting (ViC-Bench Sec. III-E, Table V): count the heads in each of four irregular regions.

The paper drew lines by hand over JHU-CROWD++/CoMT photos with 10-40 heads; those photos cannot be downloaded here,
so a scene is composed from real face crops (scikit-image's ``lfw_subset``, its first 100 images are faces) pasted
at known positions and scales on a tinted texture, and split by two drawn polylines into four regions. The ground
truth is exact: every crop's centre and the lines are known. A crop a line would cut is not pasted (the paper's
"remove ambiguous"). Users with real crowd photos import them through ``tasks/vic/crowd.py`` (option ``crowd``).

Stage 1 offers four per-region count tuples; Stages 2 and 3 ask for ``<Begin> (1, n1) (2, n2) (3, n3) (4, n4)
</End>``. A region is right when its count is within the tolerance (paper: 1); ACC needs all four right, Recall_o is
the share of right regions; counting has no Legality. In Stage 3 an action counts one region and the simulator
draws that many boxes there (the region's true boxes first, then extra boxes when the count is too high).

This module holds the settings, the instance a scene makes and the task; the prompts and the reading and scoring
of answers are in ``counting_answers``, the scenes in ``counting_scene``, the Stage-3 simulator in
``counting_simulator`` and the independent recount in ``counting_verify``.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tasks.vic.counting_answers import (
    COUNT_RULE,
    OPTION_TEXT,
    REGIONS,
    SCENE_TEXT,
    STAGE1_TEMPLATE,
    STAGE2_TEMPLATE,
    STAGE3_TEMPLATE,
    TOLERANCE,
    normalise_counts,
    read_action,
    read_counts,
    score_counts,
)
from tasks.vic.counting_scene import TEXTURES, Scene, crowd_scene, synthetic_scene
from tasks.vic.counting_simulator import MAX_ACTION_COUNT, CountingSimulator
from tasks.vic.counting_verify import verify_instance
from tasks.vic.task import (
    LETTERS,
    Drawn,
    DrawPlan,
    OpenForm,
    OpenScore,
    StageOne,
    VicInstance,
    VicTask,
    tagged,
)

# Every setting ``generate`` reads, with its default and why.
DEFAULTS: dict[str, Any] = {
    "instances": (10, 40),  # paper: images with 10-40 heads
    "size": (640, 480),  # [design] a photo-like canvas, large enough for 40 crops of up to 48 px and four labels
    "face_px": (28, 48),  # [design] lfw crops are 25 px; upscaled so each reads as a head, sizes vary like a crowd's
    "face_pool": 100,  # lfw_subset: the first 100 of its 200 images are faces, the rest are not
    "overlap": 0.1,  # [design] at most this share of the smaller crop may be covered by another ("not much")
    "texture": "mixed",  # grass | gravel | brick | noise | mixed (one of the four per instance)
    "line_vertices": (3, 5),  # [design] vertices of each dividing polyline, ends included: irregular, not wild
    "line_band": (0.3, 0.7),  # [design] the lines stay in this share of the image, so no region is a sliver
    "line_wiggle": 0.7,  # [design] the steepest sideways run per unit along a line; below 1 the lines cross once
    "line_width": 5,  # px of the drawn lines
    "line_margin": 3,  # px a kept crop stays clear of a line's edge, so no crop is cut or touches a line
    "min_per_region": 1,  # [design] every region holds a head (the paper's images had heads across all four)
    "tolerance": TOLERANCE,  # paper: a region's count is right within +-1; Stage-1 distractors miss by more
    "crowd": None,  # a folder in the JHU-CROWD++ layout to import real photos from instead (see crowd.py)
    "regions": None,  # that folder's region file (default <crowd>/regions.json)
    "allow_symlinks_outside": False,  # [sources] allow_symlinks_outside: links in the crowd folder may lead out
    "max_side": 1024,  # [design] imported photos are scaled down to this longest side
}


# -- the task ------------------------------------------------------------------------------------------------------

class CountingTask(VicTask):
    """Complex counting: four regions, 10-40 heads, per-region counts within a tolerance."""

    name = "counting"

    def __init__(self, max_action_count: int = MAX_ACTION_COUNT) -> None:
        self.max_action_count = max_action_count
        self.rejected: list[Any] = []  # the crowd photos the last generate could not import (crowd.Rejected)

    def plan(self, count: int, seed: int, options: dict[str, Any]) -> DrawPlan:
        """Composed scenes: indices, each scene drawn from (seed, index), up to four per instance wanted (a scene
        that repeats an earlier one is passed over); crowd photos: ``count`` of the folder's, drawn by the seed."""
        cfg = settle(options)
        if cfg["crowd"]:
            return plan_crowd(count, seed, cfg)
        return DrawPlan(range(4 * count), {"cfg": cfg, "seed": seed})

    def draws(self, specs: Sequence[Any], settings: Any) -> Iterator[Drawn]:
        cfg, seed = settings["cfg"], settings["seed"]
        for spec in specs:
            if cfg["crowd"]:
                yield Drawn(crowd_instance(spec, seed, cfg))
                continue
            rng = np.random.default_rng(np.random.SeedSequence([seed, spec]))
            instance = build_instance(synthetic_scene(rng, cfg), cfg, rng, source=f"synthetic seed={seed} index={spec}",
                                      extra={"seed": [seed, spec]})
            yield Drawn(instance, signature=instance.key)

    def verify(self, instance: VicInstance) -> list[str]:
        return verify_instance(instance)

    def prompts(self, instance: VicInstance, stage: int, level: int) -> str:
        if stage not in (1, 2, 3) or level not in (1, 2, 3):
            raise ValueError(f"stage {stage} / level {level}: stages and levels are 1-3")
        obj = instance.meta.get("object", "face")
        words = {"scene": SCENE_TEXT[obj], "rule": COUNT_RULE.format(object=obj), "object": obj}
        if stage == 1:
            options = "\n".join(f"{letter}. {text}" for letter, text in instance.stage_one.options.items())
            return STAGE1_TEMPLATE.format(options=options, **words)
        return (STAGE2_TEMPLATE if stage == 2 else STAGE3_TEMPLATE).format(**words)

    def parse_open(self, instance: VicInstance, text: str) -> dict[str, int] | None:
        return read_counts(text)

    def score_open(self, instance: VicInstance, answer: Any) -> OpenScore:
        truth = normalise_counts(instance.meta["counts"]) or {}
        return score_counts(truth, answer, int(instance.meta.get("tolerance", TOLERANCE)))

    def simulator(self, instance: VicInstance) -> CountingSimulator:
        return CountingSimulator(instance, self.max_action_count)

    def parse_action(self, text: str) -> str | None:
        """The action inside the last <action>...</action>, as ``region R: N`` when it reads; the raw content when
        it does not (the simulator then refuses it); None when the turn sends no action."""
        inside = tagged(text, "action")
        if inside is None:
            return None
        read = read_action(inside)
        return f"region {read[0]}: {read[1]}" if read else inside.strip()

    def before_retrospection(self, instance: VicInstance, actions: list[str], final: Any = None) -> dict[str, int]:
        """A_b: each region's first count among the legal actions (paper: "the state of each region upon its first
        utilization"); a region no action counted takes the final answer's count when ``final`` is given, so a
        run with no retrospection has A_b equal to its final answer."""
        first: dict[str, int] = {}
        for action in actions:
            read = read_action(action)
            if read and 1 <= read[0] <= 4 and 0 <= read[1] <= self.max_action_count:
                first.setdefault(str(read[0]), read[1])
        for region, value in (normalise_counts(final) or {}).items():
            first.setdefault(region, value)
        return {r: first[r] for r in REGIONS if r in first}


    def answer_text(self, instance: VicInstance) -> str:
        counts = instance.meta["counts"]
        return "<Begin> " + " ".join(f"({region}, {counts[region]})" for region in REGIONS) + " </End>"

    def oracle_actions(self, instance: VicInstance) -> list[str]:
        return [f"region {region}: {instance.meta['counts'][region]}" for region in REGIONS]


def settle(options: dict[str, Any]) -> dict[str, Any]:
    """The settings: the defaults overridden by ``options``; an unknown key is an error, pairs become tuples."""
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown counting options {unknown}; known: {sorted(DEFAULTS)}")
    cfg = {**DEFAULTS, **options}
    for key in ("instances", "size", "face_px", "line_vertices", "line_band"):
        cfg[key] = tuple(cfg[key])
    if cfg["texture"] not in (*TEXTURES, "mixed"):
        raise ValueError(f"texture {cfg['texture']!r}: one of {[*TEXTURES, 'mixed']}")
    low, high = cfg["instances"]
    if not 1 <= low <= high or high > cfg["face_pool"]:
        raise ValueError(f"instances {cfg['instances']}: need 1 <= low <= high <= face_pool ({cfg['face_pool']})")
    return cfg


# -- an imported crowd photo --------------------------------------------------------------------------------------

def plan_crowd(count: int, seed: int, cfg: dict[str, Any]) -> DrawPlan:
    """``count`` of the folder's photos (their annotations read here, each picture where it is drawn)."""
    from tasks.vic.crowd import load_crowd

    scenes, rejected = load_crowd(cfg["crowd"], cfg["regions"], tuple(cfg["instances"]),
                                  allow_symlinks_outside=bool(cfg.get("allow_symlinks_outside")))
    order = np.random.default_rng(seed).permutation(len(scenes))[:count]
    return DrawPlan([scenes[int(index)] for index in order], {"cfg": cfg, "seed": seed}, tuple(rejected))


def crowd_instance(crowd: Any, seed: int, cfg: dict[str, Any]) -> VicInstance:
    name_seed = int(hashlib.sha256(crowd.name.encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng(np.random.SeedSequence([seed, name_seed]))
    return build_instance(crowd_scene(crowd, cfg), cfg, rng, source=crowd.name, extra={"image_name": crowd.name})


# -- the instance --------------------------------------------------------------------------------------------------

def distractors(rng: np.random.Generator, truth: list[int], tolerance: int) -> list[list[int]]:
    """Three wrong count tuples, all distinct, each off by more than the tolerance in at least one region: heads
    moved between two regions (the total kept), one region miscounted, or two regions miscounted."""
    out: list[list[int]] = []
    while len(out) < 3:
        counts = list(truth)
        kind = int(rng.integers(3))
        if kind == 0:
            a, b = (int(v) for v in rng.choice(4, size=2, replace=False))
            moved = min(counts[a], int(rng.integers(tolerance + 1, tolerance + 4)))
            counts[a] -= moved
            counts[b] += moved
        else:
            for region in rng.choice(4, size=kind, replace=False):
                delta = int(rng.integers(tolerance + 1, tolerance + 4)) * (1 if rng.random() < 0.5 else -1)
                counts[int(region)] = max(0, counts[int(region)] + delta)
        if max(abs(c - t) for c, t in zip(counts, truth, strict=True)) > tolerance and counts not in out:
            out.append(counts)
    return out


def build_instance(scene: Scene, cfg: dict[str, Any], rng: np.random.Generator, source: str,
                   extra: dict[str, Any]) -> VicInstance:
    counts = {r: scene.regions.count(int(r)) for r in REGIONS}
    truth = [counts[r] for r in REGIONS]
    tuples = [truth, *distractors(rng, truth, cfg["tolerance"])]
    order = [int(i) for i in rng.permutation(4)]
    options = {LETTERS[slot]: dict(zip(REGIONS, tuples[i], strict=True)) for slot, i in enumerate(order)}
    answer = LETTERS[order.index(0)]
    buffer = io.BytesIO()
    scene.image.save(buffer, format="PNG")
    png = buffer.getvalue()
    meta: dict[str, Any] = {
        "counts": counts, "tolerance": cfg["tolerance"], "object": scene.obj, "size": list(scene.image.size),
        "points": [{"x": x, "y": y, "region": r} for (x, y), r in zip(scene.points, scene.regions, strict=True)],
        "boxes": scene.boxes, "polylines": scene.polylines, "regions": scene.polygons, "labels": scene.labels,
        "line_width": cfg["line_width"], "overlap": cfg["overlap"] if scene.polylines else None,
        "instances": list(cfg["instances"]), "options": options, "source": source, **scene.extra, **extra}
    content = json.dumps({k: meta[k] for k in ("counts", "points", "boxes", "regions")}, sort_keys=True)
    key = "counting-" + hashlib.sha256(png + content.encode()).hexdigest()[:16]
    option_text = {letter: OPTION_TEXT.format(*c.values()) for letter, c in options.items()}
    words = {"scene": SCENE_TEXT[scene.obj], "rule": COUNT_RULE.format(object=scene.obj), "object": scene.obj}
    stage_one = StageOne(question=STAGE1_TEMPLATE.format(
        options="\n".join(f"{k}. {v}" for k, v in option_text.items()), **words), image=png, options=option_text,
        answer=answer)
    open_form = OpenForm(question=STAGE2_TEMPLATE.format(**words), image=png, answer=dict(counts))
    return VicInstance(task="counting", key=key, stage_one=stage_one, open_form=open_form, meta=meta)


