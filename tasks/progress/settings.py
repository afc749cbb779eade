"""PROGRESS-BENCH's section of the configuration: how observations are sampled.

Mounted by ``schemas.config.Settings`` through the plugin's ``settings_section``/``settings_model``: read from the
``[progress]`` section of benchwright.toml (and ``BENCHWRIGHT_PROGRESS__<KEY>``), as ``settings.progress``.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from schemas.config import Section


class ProgressSettings(Section):
    """How PROGRESS-BENCH samples observations. Scheduled runs and backfills read the same values, so a nightly
    run never undoes a backfill; change them here (or per run on the CLI) and backfill to rebuild."""

    interval_per_segment: int = Field(default=2, ge=0)
    boundary_offsets: tuple[float, ...] = (0.1,)
    demo_camera: str = "front"
    cross_cameras: tuple[str, ...] = ("top", "side")
    visual_negatives_per_demo: int = Field(default=1, ge=0)

    @field_validator("boundary_offsets")
    @classmethod
    def _offsets(cls, offsets: tuple[float, ...]) -> tuple[float, ...]:
        """Each offset b samples b and 1 - b of a segment: a fraction of at most one half."""
        wrong = [b for b in offsets if not 0 <= b <= 0.5]
        if wrong:
            raise ValueError(f"boundary offsets are fractions of a segment from 0 to 0.5, got {wrong}")
        return offsets
