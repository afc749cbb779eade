"""Observation sampling between key steps with linearly interpolated progress (ProgressLM Sec. 2.1).

Key frames k_0 < k_1 < ... < k_N (k_0: the first frame, k_j: the frame step j completes) carry progress p_j = j / N.
A frame f inside segment j (k_j < f < k_{j+1}) sits at delta = (f - k_j) / (k_{j+1} - k_j) in (0, 1) and gets
p* = p_j + delta (p_{j+1} - p_j). The delta is the one of the frame actually taken, so p* is exact for that frame.
Interval sampling spreads frames evenly over a segment; boundary sampling puts them close to its two ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class SamplingPlan:
    interval_per_segment: int = 2  # evenly spaced frames per segment
    boundary_offsets: tuple[float, ...] = (0.1,)  # each offset b samples delta = b and 1 - b
    demo_camera: str = "front"
    cross_cameras: tuple[str, ...] = ("top", "side")


@dataclass(frozen=True)
class ProgressSample:
    segment: int  # j: between key frames j and j + 1 (0-based)
    frame: int
    delta: float  # realised relative position in the segment, in (0, 1)
    progress: float  # p* in (0, 1)
    strategy: Literal["interval", "boundary"]


def segment_samples(key_frames: list[int], plan: SamplingPlan) -> list[ProgressSample]:
    """The sampled frames of every segment, in frame order, each frame once (interval wins a tie)."""
    steps = len(key_frames) - 1
    if steps < 1:
        raise ValueError("sampling needs at least one key step after the first frame")
    chosen: dict[int, ProgressSample] = {}
    for j in range(steps):
        start, end = key_frames[j], key_frames[j + 1]
        wanted: list[tuple[float, Literal["interval", "boundary"]]] = [
            (i / (plan.interval_per_segment + 1), "interval") for i in range(1, plan.interval_per_segment + 1)]
        for offset in plan.boundary_offsets:
            wanted += [(offset, "boundary"), (1 - offset, "boundary")]
        for target, strategy in wanted:
            frame = start + round(target * (end - start))
            if not start < frame < end or frame in chosen:
                continue  # a segment too short for this position, or a frame already taken
            delta = (frame - start) / (end - start)
            chosen[frame] = ProgressSample(segment=j, frame=frame, delta=delta, progress=(j + delta) / steps,
                                           strategy=strategy)
    return [chosen[f] for f in sorted(chosen)]


def closest_reference(sample: ProgressSample) -> int:
    """1-based index of the nearer key frame in a visual demo [k_0, ..., k_N]; ties go to the earlier one."""
    return sample.segment + (2 if sample.delta > 0.5 else 1)


def closest_text_step(sample: ProgressSample, steps: int) -> int:
    """1-based index of the text step whose completion progress (j / N) is nearest; before step 1 that is step 1."""
    nearest = sample.segment + (1 if sample.delta > 0.5 else 0)
    return min(max(nearest, 1), steps)


def percent_delta(progress: float, reference_progress: float) -> float:
    """The signed offset of a sample from its reference step in percentage points (the published files print it
    rounded, with its sign: "+7%", "-0%")."""
    return round(100 * (progress - reference_progress), 2)
