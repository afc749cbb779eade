"""Instance extraction (EXPLORE-Bench Sec. 3.2, App. C.1): the initial and final scene frames of a clip's main
activity and the atomic actions between them, with the quality checks the paper's reviewers applied, each failing
with a reason: a blurred frame (variance of the Laplacian), a drastic viewpoint change between the two frames (few
the two frames do not align by a small warp), too few actions; and the Short / Medium / Long partition by action count.
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
    # A drastic viewpoint change: the warp aligning the two frames moves their corners by more than max_view_shift
    # of the diagonal, or leaves them correlated below min_view_correlation. Measured on the sample world: the head
    # camera at the start and end of an activity 0.02-0.04; its top camera against the head camera 0.22.
    min_view_correlation: float = 0.7
    max_view_shift: float = 0.15


# The sharpness check looks at frames scaled to this width: the variance of the Laplacian depends on
# resolution, and one threshold should hold for 480p and 4K clips alike.
ANALYSIS_WIDTH = 320


def _analysed(rgb: Any) -> Any:
    import cv2

    height, width = rgb.shape[:2]
    if width == ANALYSIS_WIDTH:
        return rgb
    size = (ANALYSIS_WIDTH, max(1, round(height * ANALYSIS_WIDTH / width)))
    return cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)


def sharpness(rgb: Any) -> float:
    """Variance of the Laplacian at the analysis width: high for crisp edges, low for a blurred frame."""
    import cv2

    grey = cv2.cvtColor(_analysed(rgb), cv2.COLOR_RGB2GRAY)
    return float(cv2.Laplacian(grey, cv2.CV_64F).var())


def view_change(first: Any, second: Any) -> tuple[float, float]:
    """(correlation of the two frames once aligned, how far the aligning warp moves the frame's corners as a share
    of its diagonal). The frames are aligned by an affine warp (ECC on small blurred grey images, which works on
    plain, low-texture scenes where feature matching finds too little). From about the same place the warp is
    small and the correlation high; a drastic viewpoint change needs a large warp, or no warp aligns them (then
    correlation 0 and shift 1)."""
    import cv2
    import numpy as np

    size = (160, 120)
    grey = [cv2.GaussianBlur(cv2.resize(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), size, interpolation=cv2.INTER_AREA),
                             (5, 5), 0).astype(np.float32) for image in (first, second)]
    warp = np.eye(2, 3, dtype=np.float32)
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 100, 1e-5)
    try:
        correlation, warp = cv2.findTransformECC(grey[0], grey[1], warp, cv2.MOTION_AFFINE, criteria, None, 5)
    except cv2.error:
        return 0.0, 1.0
    corners = np.float32([[0, 0], [size[0], 0], [size[0], size[1]], [0, size[1]]])
    moved = corners @ warp[:, :2].T + warp[:, 2]
    shift = float(np.linalg.norm(moved - corners, axis=1).max() / np.hypot(*size))
    return float(correlation), min(shift, 1.0)


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
    correlation, shift = view_change(frames[start_frame], frames[end_frame])
    scores |= {"view_correlation": correlation, "view_shift": shift}
    if shift > quality.max_view_shift or correlation < quality.min_view_correlation:
        raise InstanceRejected(f"{clip}: drastic viewpoint change between the initial and final frames (aligning "
                               f"them moves the corners {shift:.0%} of the diagonal, correlation {correlation:.2f})")
    return (Extracted(start_s, end_s, start_frame, end_frame, actions, subset, scores),
            {"initial": frames[start_frame], "final": frames[end_frame]})
