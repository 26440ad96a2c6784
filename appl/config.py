"""Configuration: which models exist, how to reach them, their limits and prices, budgets.

Read from `appl.toml` (the path given, else `$APPL_CONFIG`, else `./appl.toml`, else built-in
defaults), then environment overrides, then programmatic `configure(...)`:

    [defaults]
    default_model = "local"
    temperature = 0.0

    [models.gpt-4o-mini]
    provider = "openai"
    api_key_env = "OPENAI_API_KEY"
    price_input_per_mtok = 0.15
    price_output_per_mtok = 0.60

    [budget]
    max_cost_usd = 5.0

Environment: APPL_DEFAULT_MODEL picks the default model; OPENAI_BASE_URL / OPENAI_API_KEY fill
in `base_url` / the key of provider-"openai" models that do not set them in the file.
"""

from __future__ import annotations

import os
import threading
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from appl.errors import ConfigError

__all__ = [
    "AppConfig",
    "BudgetConfig",
    "ModelConfig",
    "configure",
    "get_config",
    "load_config",
    "reset_config",
]

# Capabilities a server may lack; everything not listed is assumed supported.
DEFAULT_CAPABILITIES: dict[str, bool] = {
    "n": True,  # n > 1 choices in one request (else emulated with n requests)
    "auto_tool_choice": True,  # tool_choice="auto" actually produces tool calls
    "json_schema": True,  # response_format={"type": "json_schema", ...}
    "stream_usage": True,  # stream_options.include_usage
}


class ModelConfig(BaseModel):
    """One model alias: where it lives, how to authenticate, its limits and its prices."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alias: str
    provider: str = "openai"
    base_url: str | None = None
    model: str = ""  # the server's model name; empty means "same as alias"
    api_key_env: str | None = "OPENAI_API_KEY"
    api_key: str | None = Field(default=None, repr=False)  # literal key, for tests; never logged
    max_concurrency: int = Field(default=16, ge=1)
    rpm: float | None = Field(default=None, gt=0)  # requests per minute
    tpm: float | None = Field(default=None, gt=0)  # tokens per minute
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=3, ge=0)  # retries after the first attempt
    backoff_base_s: float = Field(default=0.5, ge=0)  # first retry waits up to this (full jitter)
    backoff_max_s: float = Field(default=30.0, ge=0)
    retry_after_cap_s: float = Field(
        default=60.0, ge=0
    )  # never wait longer than this for Retry-After
    price_input_per_mtok: float = Field(default=0.0, ge=0)  # USD per million prompt tokens
    price_output_per_mtok: float = Field(default=0.0, ge=0)
    capabilities: dict[str, bool] = Field(default_factory=dict)
    # Tokens the server accepts per request, prompt and completion together; None: unknown
    # (the local provider knows its own, see appl.window.context_window).
    context_window: int | None = Field(default=None, gt=0)
    extra_body: dict[str, Any] = Field(default_factory=dict)  # sent with every request
    options: dict[str, Any] = Field(default_factory=dict)  # provider-specific settings
    # where this alias was defined (a file, "built-in", "configure()"), for error messages;
    # set by appl, not read from the file
    origin: str = Field(default="", exclude=True, repr=False)

    @model_validator(mode="after")
    def _default_model_name(self) -> ModelConfig:
        if not self.model:
            object.__setattr__(self, "model", self.alias)
        return self

    def supports(self, capability: str) -> bool:
        return self.capabilities.get(capability, DEFAULT_CAPABILITIES.get(capability, True))

    def resolve_api_key(self) -> str:
        """The API key: the literal `api_key`, else the env var `api_key_env`, else ConfigError."""
        if self.api_key:
            return self.api_key
        if self.api_key_env and os.environ.get(self.api_key_env):
            return os.environ[self.api_key_env]
        if self.api_key_env:
            raise ConfigError(
                f"model {self.alias!r}: no API key: the environment variable {self.api_key_env} "
                f"is not set. Export {self.api_key_env}=..., or set api_key_env (or api_key, for "
                f"tests) under [models.{self.alias}] in appl.toml."
            )
        raise ConfigError(
            f'model {self.alias!r}: no API key configured. Set api_key_env = "VAR" under '
            f"[models.{self.alias}] in appl.toml and export VAR."
        )

    def redacted(self) -> dict[str, Any]:
        out = self.model_dump()
        if out.get("api_key"):
            out["api_key"] = "***"
        return out


class BudgetConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_calls: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    max_cost_usd: float | None = Field(default=None, ge=0)


class AppConfig(BaseModel):
    """The whole configuration. `sections` keeps other top-level tables (e.g. [trace])."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, ModelConfig] = Field(default_factory=dict)
    default_model: str | None = None
    temperature: float | None = None
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    sections: dict[str, Any] = Field(default_factory=dict)
    source: str = "defaults"  # where it was read from (a path, or "defaults")
    default_origin: str = "built-in"  # what chose default_model (for error messages)

    def model(self, alias: str | None = None) -> ModelConfig:
        """The config of `alias` (None: the default model); ConfigError says what to do."""
        name = alias or self.default_model
        if not name:
            raise ConfigError(
                "no model given and no default model: set default_model under [defaults] in "
                "appl.toml, export APPL_DEFAULT_MODEL, or call appl.configure(default_model=...)"
            )
        try:
            return self.models[name]
        except KeyError:
            known = (
                ", ".join(f"{a} (from {m.origin or '?'})" for a, m in sorted(self.models.items()))
                or "none"
            )
            which = "" if alias else f" (the default model, chosen by {self.default_origin})"
            file = self.source if self.source != "defaults" else "none (built-in defaults)"
            raise ConfigError(
                f"unknown model alias {name!r}{which}; known: {known}; config file: {file}. "
                f"Add a [models.{name}] table to appl.toml or call "
                f"appl.configure(models={{{name!r}: {{...}}}})"
            ) from None

    def redacted(self) -> dict[str, Any]:
        """A JSON-able dict with every secret masked, for trace headers and logs."""
        out = self.model_dump(exclude={"models"})
        out["models"] = {alias: m.redacted() for alias, m in self.models.items()}
        return out


def _builtin_models() -> dict[str, dict[str, Any]]:
    # "local" is the embedded llama.cpp server: one request at a time, no n>1, and Qwen's
    # template never yields tool calls for tool_choice="auto" (see /work/shared/FACTS.md).
    return {
        "local": {
            "provider": "local",
            "api_key_env": None,
            "api_key": "local",
            "max_concurrency": 1,
            "timeout_s": 300.0,
            # json_schema declared: llama.cpp enforces it with a grammar (planner default)
            "capabilities": {"n": False, "auto_tool_choice": False, "json_schema": True},
        }
    }


def _with_local_defaults(table: dict[str, Any]) -> dict[str, Any]:
    """A table for the embedded server (provider "local") starts from the built-in local
    model's settings: one request at a time, the long timeout, its capabilities. Without
    this, `[models.local] options = {...}` fell back to the remote defaults (16 concurrent
    requests, 120 s): queued requests timed out at the one-slot server and were retried while
    it still worked on them (measured: 7 of 150 Verilog generations lost that way)."""
    if table.get("provider") != "local":
        return table
    return {**_builtin_models()["local"], **table}


def _parse(data: dict[str, Any], source: str) -> AppConfig:
    data = dict(data)
    defaults = data.pop("defaults", {}) or {}
    builtin = _builtin_models()
    from_file = data.pop("models", {}) or {}
    raw_models = {**builtin, **from_file}
    budget = data.pop("budget", {}) or {}
    models: dict[str, ModelConfig] = {}
    for alias, table in raw_models.items():
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: [models.{alias}] must be a table, got {table!r}")
        origin = source if alias in from_file else "built-in"
        table = {"alias": alias, **_with_local_defaults(table), "origin": origin}
        if table.get("provider", "openai") == "openai" and not table.get("base_url"):
            env_url = os.environ.get("OPENAI_BASE_URL") or None
            table["base_url"] = env_url
            if env_url:
                table["origin"] = f"{origin}, base_url from $OPENAI_BASE_URL"
        try:
            models[alias] = ModelConfig(**table)
        except ValidationError as exc:
            raise ConfigError(f"{source}: bad [models.{alias}]: {_explain(exc)}") from None
    try:
        return AppConfig(
            models=models,
            default_model=os.environ.get("APPL_DEFAULT_MODEL")
            or defaults.get("default_model")
            or "local",
            default_origin=(
                "$APPL_DEFAULT_MODEL"
                if os.environ.get("APPL_DEFAULT_MODEL")
                else f"[defaults] in {source}"
                if defaults.get("default_model")
                else "the built-in default"
            ),
            temperature=defaults.get("temperature"),
            budget=BudgetConfig(**budget),
            sections=data,
            source=source,
        )
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_explain(exc)}") from None


def _explain(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors())


def load_config(path: str | Path | None = None) -> AppConfig:
    """Read appl.toml from `path`, else $APPL_CONFIG, else ./appl.toml, else built-in defaults."""
    chosen = path or os.environ.get("APPL_CONFIG")
    if chosen is None and Path("appl.toml").is_file():
        chosen = "appl.toml"
    if chosen is None:
        return _parse({}, "defaults")
    file = Path(chosen)
    try:
        data = tomllib.loads(file.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"config file {file} does not exist (from {'APPL_CONFIG' if path is None else 'the path given'})"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML: {exc}") from None
    return _parse(data, str(file))


_lock = threading.Lock()
_current: AppConfig | None = None
_generation = 0  # bumped on every change, so caches keyed on the config know to refresh


def get_config() -> AppConfig:
    """The process-wide configuration (loaded on first use)."""
    global _current
    if _current is None:
        with _lock:
            if _current is None:
                _current = load_config()
    return _current


def config_generation() -> int:
    return _generation


def configure(**kwargs: Any) -> AppConfig:
    """Override parts of the process-wide config; returns the new one.

    `models` entries (dicts or ModelConfig) are added to, or replace, the known ones; `budget`
    takes a dict or BudgetConfig; any other AppConfig field is replaced. Example:
    `configure(models={"scripted": {"provider": "openai", "base_url": url, "api_key": "test"}},
    default_model="scripted")`.
    """
    global _current, _generation
    base = get_config()
    unknown = set(kwargs) - set(AppConfig.model_fields)
    if unknown:
        raise ConfigError(
            f"configure(): unknown setting(s) {sorted(unknown)}; known: {sorted(AppConfig.model_fields)}"
        )
    models = dict(base.models)
    for alias, spec in (kwargs.pop("models", None) or {}).items():
        if isinstance(spec, ModelConfig):
            models[alias] = spec.model_copy(
                update={"alias": alias, "origin": spec.origin or "configure()"}
            )
            continue
        try:
            models[alias] = ModelConfig(
                **{"alias": alias, **_with_local_defaults(spec), "origin": "configure()"}
            )
        except ValidationError as exc:
            raise ConfigError(f"configure(): bad model {alias!r}: {_explain(exc)}") from None
    if "default_model" in kwargs:
        kwargs["default_origin"] = "configure()"
    if isinstance(kwargs.get("budget"), dict):
        kwargs["budget"] = BudgetConfig(**kwargs["budget"])
    with _lock:
        _current = base.model_copy(update={**kwargs, "models": models})
        _generation += 1
    return _current


def reset_config(config: AppConfig | None = None) -> None:
    """Forget programmatic overrides: the next get_config() reloads (or use `config`)."""
    global _current, _generation
    with _lock:
        _current = config
        _generation += 1
