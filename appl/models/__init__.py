"""Models: one seam (`ModelAPI.generate`), providers behind it, limits/retries/accounting around it.

    model = get_model("gpt-4o-mini")          # or get_model() for the default model
    response = await model.generate(GenRequest(model="gpt-4o-mini", messages=[...]))
    await close_models()                      # at the end of the event loop

`get_model` returns a `ManagedModel`: the provider's ModelAPI wrapped with the model's limits
(max_concurrency, rpm, tpm), the retry policy and usage/budget accounting. Models are cached
per alias per event loop; changing an alias's config (`appl.configure`) makes a new one.
Providers: "openai" (any OpenAI-compatible server), "local" (the embedded llama.cpp server,
started on first use), and whatever `register_provider` adds.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
import weakref
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any

from appl.config import ModelConfig, get_config
from appl.errors import ConfigError
from appl.models._limits import RequestRateLimiter, TokenBucket
from appl.models._managed import ManagedModel
from appl.types import ModelAPI

if TYPE_CHECKING:
    from appl.models.openai_provider import OpenAIModel

__all__ = [
    "ManagedModel",
    "OpenAIModel",
    "RequestRateLimiter",
    "TokenBucket",
    "close_models",
    "get_model",
    "register_provider",
]

ProviderFactory = Callable[[ModelConfig], ModelAPI]


def __getattr__(name: str) -> Any:
    # `OpenAIModel` is imported on first use: the openai package takes about half a second
    # to import, and `import appl` should not pay for it before any model is used.
    if name == "OpenAIModel":
        from appl.models.openai_provider import OpenAIModel

        return OpenAIModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _openai_provider(config: ModelConfig) -> ModelAPI:
    """Any OpenAI-compatible server (appl.models.openai_provider, imported when first used)."""
    from appl.models.openai_provider import OpenAIModel

    return OpenAIModel(config)


def _local_provider(config: ModelConfig) -> ModelAPI:
    """The embedded llama.cpp server (see appl.local.provider), imported only when used."""
    from appl.local.provider import make_local_model

    return make_local_model(config)


_providers: dict[str, ProviderFactory] = {"openai": _openai_provider, "local": _local_provider}
_lock = threading.Lock()
# loop (or None outside any loop) -> alias -> the model built for that alias's current config
_cache: weakref.WeakKeyDictionary[object, dict[str, ManagedModel]] = weakref.WeakKeyDictionary()
_no_loop_cache: dict[str, ManagedModel] = {}
_retired: list[ManagedModel] = []  # replaced by a config change; closed by close_models()


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Make `provider = "<name>"` usable in model configs. `factory(config)` builds a ModelAPI."""
    with _lock:
        _providers[name] = factory


def _loop_cache() -> dict[str, ManagedModel]:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return _no_loop_cache
    cache = _cache.get(loop)
    if cache is None:
        cache = _cache[loop] = {}
        _close_at_loop_shutdown(loop)
    return cache


# loop -> the suspended async generator whose `finally` closes that loop's models
_shutdown_hooks: weakref.WeakKeyDictionary[object, AsyncGenerator[None, None]] = (
    weakref.WeakKeyDictionary()
)


def _close_at_loop_shutdown(loop: asyncio.AbstractEventLoop) -> None:
    """Close this loop's models when the loop shuts down, so `asyncio.run(main())` leaves no
    open HTTP sessions behind ("Unclosed client session" warnings, leaked connections).

    asyncio has no loop-shutdown callback, but every way of ending a loop properly
    (asyncio.run, asyncio.Runner, `loop.shutdown_asyncgens()`) closes the async generators
    that loop has started. So one generator is started here and parked at its `yield`; the
    loop closes it at shutdown, and its `finally` closes the models while the loop still
    runs. Loops ended without shutdown_asyncgens are handled at interpreter exit instead.
    """

    async def closer() -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            _shutdown_hooks.pop(asyncio.get_running_loop(), None)
            await close_models()

    agen = closer()
    step = agen.__anext__()  # the loop's first-iteration hook registers the generator now
    try:
        step.send(None)
    except StopIteration:
        pass
    # The loop only keeps a weak reference, so the generator must be held; but it holds the
    # loop (its finalizer hook), so holding it in a module-level table would keep every
    # loop alive (a sync run makes one per run). Kept on the loop itself, the two form a
    # cycle the garbage collector frees; loops without a __dict__ use the table, which
    # forgets a loop when it shuts down.
    try:
        loop._appl_close_models = agen  # type: ignore[attr-defined]
    except AttributeError:
        _shutdown_hooks[loop] = agen


@atexit.register
def _close_at_exit() -> None:
    """Models of loops that were left without shutting down (a loop the program made and
    never closed): close them on their loop now, quietly. Running loops are left alone."""
    for loop, cache in list(_cache.items()):
        if not cache or not isinstance(loop, asyncio.AbstractEventLoop):
            continue
        if loop.is_closed() or loop.is_running():
            continue
        models = list(cache.values())
        cache.clear()
        try:
            loop.run_until_complete(_aclose_all(models))
        except Exception:  # at exit, closing is best effort and must never raise
            pass


async def _aclose_all(models: list[ManagedModel]) -> None:
    for model in models:
        await model.aclose()


def get_model(alias: str | None = None) -> ManagedModel:
    """The managed model for `alias` (None: the configured default model)."""
    config = get_config().model(alias)
    cache = _loop_cache()
    model = cache.get(config.alias)
    if model is not None and model.config == config:
        return model
    factory = _providers.get(config.provider)
    if factory is None:
        raise ConfigError(
            f"model {config.alias!r}: unknown provider {config.provider!r} (known: "
            f"{', '.join(sorted(_providers))}); fix `provider` under [models.{config.alias}] or "
            f"call appl.models.register_provider({config.provider!r}, factory)"
        )
    if config.provider == "openai":
        config.resolve_api_key()  # a missing key is a ConfigError now, not at the first call
    managed = ManagedModel(config, factory(config))
    with _lock:
        if model is not None:
            _retired.append(model)
        cache[config.alias] = managed
    return managed


async def close_models() -> None:
    """Close every model client of this event loop (and models retired by config changes)."""
    cache = _loop_cache()
    with _lock:
        models = [*cache.values(), *_retired]
        cache.clear()
        _retired.clear()
    for model in models:
        await model.aclose()
