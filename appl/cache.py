"""Answer a repeated deterministic request from memory instead of asking the server again.

    with appl.cache.response_cache() as cache:
        run_both_solvers()
    cache.hits, cache.misses

A request is cached only when the server's answer is a function of it: a `seed` is set or the
temperature is 0 (llama.cpp with one slot answers such a request byte for byte the same; a
hosted API may not, so use this with the embedded model or where you accept its answer for the
same request). The key is the model alias and the hash of the whole resolved request
(messages, tools, sampling, seed: appl.identity.request_hash), so any difference in the prompt
is a miss. A hit returns the recorded response, usage included: the token counts of a run stay
what the requests cost, whether or not the server was asked.

Only answers are kept, never errors; two identical requests in flight at once both go to the
server (the first answer is kept). The cache lives in memory for the `with` block and chains
to the process-wide resolver installed before it (`set_model_resolver`: a tracer, a replay). A
context-scoped resolver (`use_model_resolver`) comes before any process-wide one, so calls
made under one are not cached.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator
from contextlib import contextmanager

from appl import runtime
from appl.identity import CallIdentity, request_hash
from appl.types import GenRequest, GenResponse, ModelAPI, TextCallback

__all__ = ["ResponseCache", "is_deterministic", "response_cache"]


def is_deterministic(request: GenRequest) -> bool:
    """Whether a request pins its answer: a seed, or temperature 0."""
    return request.seed is not None or request.temperature == 0


class ResponseCache:
    """A model resolver (appl.runtime.set_model_resolver) that wraps every model in a cache."""

    def __init__(self, inner: runtime.ModelResolver | None = None) -> None:
        self.inner = inner
        self.answers: dict[tuple[str, str], GenResponse] = {}
        self.hits = 0
        self.misses = 0

    def __call__(self, alias: str | None, identity: CallIdentity) -> ModelAPI:
        if self.inner is not None:
            model = self.inner(alias, identity)
        else:
            from appl.models import get_model  # late: keeps `import appl.cache` light

            model = get_model(alias)
        return _CachedModel(self, model)


@dataclasses.dataclass
class _CachedModel:
    cache: ResponseCache
    model: ModelAPI

    @property
    def name(self) -> str:
        return self.model.name

    async def generate(
        self, request: GenRequest, *, on_text: TextCallback | None = None
    ) -> GenResponse:
        if not is_deterministic(request):
            return await self.model.generate(request, on_text=on_text)
        key = (request.model, request_hash(request))
        found = self.cache.answers.get(key)
        if found is None:
            self.cache.misses += 1
            found = await self.model.generate(request, on_text=on_text)
            self.cache.answers.setdefault(key, found)
            return found
        self.cache.hits += 1
        if request.stream and on_text is not None and found.text:
            done = on_text(found.text)  # the whole text as one delta
            if inspect.isawaitable(done):
                await done
        return dataclasses.replace(found, latency_s=0.0, retries=0)

    async def aclose(self) -> None:
        await self.model.aclose()


@contextmanager
def response_cache() -> Iterator[ResponseCache]:
    """Cache deterministic requests process-wide (every thread and event loop) in this block."""
    previous = runtime._global_resolver
    cache = ResponseCache(previous)
    runtime.set_model_resolver(cache)
    try:
        yield cache
    finally:
        runtime.set_model_resolver(previous)
