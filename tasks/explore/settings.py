"""EXPLORE-Bench's section of the configuration: instance checks and subset bounds.

Mounted by ``schemas.config.Settings`` through the plugin's ``settings_section``/``settings_model``: read from the
``[explore]`` section of benchwright.toml (and ``BENCHWRIGHT_EXPLORE__<KEY>``), as ``settings.explore``.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from schemas.config import Section


class ExploreSettings(Section):
    """EXPLORE-Bench instance checks and subsets (Sec. 3.2, 4.1)."""

    short_min: int = Field(default=11, ge=1)  # Short: 11-99 atomic actions
    medium_min: int = Field(default=100, ge=1)  # Medium: 100-199
    long_min: int = Field(default=200, ge=1)  # Long: 200 and more
    min_sharpness: float = Field(default=30.0, ge=0)  # variance of the Laplacian; real footage often uses 100
    min_view_correlation: float = Field(default=0.7, ge=-1, le=1)
    max_view_shift: float = Field(default=0.15, ge=0)
    middle_frames: int = Field(default=0, ge=0)  # evenly spaced frames between the two scenes, for stepwise use

    @model_validator(mode="after")
    def _ordered_subsets(self) -> ExploreSettings:
        if not self.short_min < self.medium_min < self.long_min:
            raise ValueError(f"the subset bounds must rise: short_min {self.short_min} < medium_min "
                             f"{self.medium_min} < long_min {self.long_min}")
        return self
