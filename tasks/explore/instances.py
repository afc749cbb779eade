"""Instance extraction (EXPLORE-Bench Sec. 3.2, App. C.1): the initial and final scene frames of a clip's main
activity and the atomic actions between them, with the quality checks the paper's reviewers applied, each failing
with a reason: a blurred frame (variance of the Laplacian), a drastic viewpoint change between the two frames (few
feature matches agree on one homography), too few actions; and the Short / Medium / Long partition by action count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tasks.sources.narrations import Narration


class InstanceRejected(ValueError):
    """The clip gives no usable instance; the message says why."""


@dataclass(frozen=True)
class SubsetBounds:
    """Action counts per subset (the paper: Short 11-99, Medium 100-199, Long 200 and more)."""

    short_min: int = 11
    medium_min: int = 100
    long_min: int = 200

    def subset_of(self, actions: int) -> str | None:
        if actions >= self.long_min:
            return "Long"
        if actions >= self.medium_min:
            return "Medium"
        if actions >= self.short_min:
            return "Short"
        return None


@dataclass(frozen=True)
class QualityThresholds:
    # Variance of the Laplacian of the grey frame; lower is blurred. 30 passes the flat-shaded sample world (about
    # 60) and rejects any real blur (a 9x9 Gaussian drops it below 1); footage is often held to 100.
    min_sharpness: float = 30.0
    min_view_agreement: float = 0.5  # share of matched features that fit one homography between the two frames
    min_matches: int = 30  # fewer ORB matches than this counts as a drastic viewpoint change


def sharpness(rgb: Any) -> float:
    """Variance of the Laplacian: high for crisp edges, low for a blurred frame."""
    import cv2

    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    return float(cv2.Laplacian(grey, cv2.CV_64F).var())


def view_agreement(first: Any, second: Any) -> tuple[float, int]:
    """(share of ratio-test ORB matches that are RANSAC inliers of one homography, number of matches). Two views
    of the same scene from about the same place agree; a drastic viewpoint change leaves few consistent matches."""
    import cv2
    import numpy as np

    orb = cv2.ORB_create(nfeatures=1000)
    grey = [cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) for image in (first, second)]
    (kp1, des1), (kp2, des2) = (orb.detectAndCompute(g, None) for g in grey)
    if des1 is None or des2 is None or len(kp1) < 2 or len(kp2) < 2:
        return 0.0, 0
    pairs = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(des1, des2, k=2)
    good = [p[0] for p in pairs if len(p) == 2 and p[0].distance < 0.75 * p[1].distance]
    if len(good) < 4:
        return 0.0, len(good)
    source = np.float32([kp1[m.queryIdx].pt for m in good]).reshape(-1, 1, 2)
    target = np.float32([kp2[m.trainIdx].pt for m in good]).reshape(-1, 1, 2)
    _, mask = cv2.findHomography(source, target, cv2.RANSAC, 5.0)
    inliers = int(mask.sum()) if mask is not None else 0
    return inliers / len(good), len(good)


@dataclass(frozen=True)
class Extracted:
    start_s: float
    end_s: float
    start_frame: int
    end_frame: int
    actions: list[str]
    subset: str
    quality: dict[str, float]


def activity_span(narrations: list[Narration], duration_s: float, margin_s: float = 0.5) -> tuple[float, float]:
    """Start and end of the main activity: from just before the first narration to just after the last."""
    if not narrations:
        raise InstanceRejected("no narrated actions")
    return max(0.0, narrations[0].time_s - margin_s), min(duration_s, narrations[-1].time_s + margin_s)


def extract_instance(clip: str, narrations: list[Narration], *, fps: float, n_frames: int,
                     read_frames: Any, span: tuple[float, float] | None = None,
                     bounds: SubsetBounds = SubsetBounds(), quality: QualityThresholds = QualityThresholds()
                     ) -> tuple[Extracted, dict[str, Any]]:
    """The instance of one clip and its two frames ``{"initial": rgb, "final": rgb}``; InstanceRejected (naming
    ``clip``) when a check fails. ``read_frames(indices)`` returns RGB arrays by frame index."""
    duration = n_frames / fps
    late = [n for n in narrations if n.time_s > duration]
    if late:
        raise InstanceRejected(f"{clip}: {len(late)} narration(s) run past the video's end ({duration:.2f} s), "
                               f"first at {late[0].time_s:.2f} s: {late[0].text!r}")
    start_s, end_s = span or activity_span(narrations, duration)
    if not 0 <= start_s < end_s <= duration:
        raise InstanceRejected(f"{clip}: activity span {start_s:.2f}-{end_s:.2f} s is not inside the video "
                               f"(0-{duration:.2f} s)")
    actions = [n.text for n in narrations if start_s <= n.time_s <= end_s and n.text.strip()]
    subset = bounds.subset_of(len(actions))
    if subset is None:
        raise InstanceRejected(f"{clip}: {len(actions)} atomic actions between {start_s:.2f} and {end_s:.2f} s, "
                               f"fewer than {bounds.short_min}")
    start_frame, end_frame = min(n_frames - 1, round(start_s * fps)), min(n_frames - 1, round(end_s * fps))
    frames = read_frames([start_frame, end_frame])
    scores = {"initial_sharpness": sharpness(frames[start_frame]), "final_sharpness": sharpness(frames[end_frame])}
    for role in ("initial", "final"):
        if scores[f"{role}_sharpness"] < quality.min_sharpness:
            raise InstanceRejected(f"{clip}: the {role} frame is blurred (Laplacian variance "
                                   f"{scores[f'{role}_sharpness']:.1f} < {quality.min_sharpness})")
    agreement, matches = view_agreement(frames[start_frame], frames[end_frame])
    scores |= {"view_agreement": agreement, "view_matches": float(matches)}
    if matches < quality.min_matches or agreement < quality.min_view_agreement:
        raise InstanceRejected(f"{clip}: drastic viewpoint change between the initial and final frames "
                               f"({matches} feature matches, {agreement:.0%} consistent)")
    return (Extracted(start_s, end_s, start_frame, end_frame, actions, subset, scores),
            {"initial": frames[start_frame], "final": frames[end_frame]})
