"""Provider "local": the embedded llama.cpp server behind the ordinary OpenAI-compatible
provider. Nothing above the model seam knows it is local; the only differences are that the
server is started on first use, and the capability notes in the alias's config (no n>1, no
automatic tool calls with Qwen's template) make the model layer emulate those features.

Config (appl.toml), all optional:

    [models.local]
    provider = "local"
    options = { model = "qwen2.5-coder-0.5b", n_ctx = 4096, n_threads = 2 }

With `base_url` set, the alias talks to a llama.cpp server the user runs and starts nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from appl.config import ModelConfig
from appl.local.server import ServerFlags, shared_server
from appl.models.openai_provider import OpenAIModel
from appl.types import GenRequest

_FLAG_OPTIONS = ("n_ctx", "n_threads", "interrupt_requests")


def server_flags(options: dict[str, Any]) -> ServerFlags | None:
    """The server flags the alias's options ask for; None when it asks for none (defaults)."""
    given = {k: options[k] for k in _FLAG_OPTIONS if k in options}
    extra = tuple(str(a) for a in options.get("server_args", ()))
    if not given and not extra:
        return None
    return ServerFlags(**given, extra_args=extra)


class LlamaCppModel(OpenAIModel):
    """The OpenAI-compatible provider, with the request dialect llama-cpp-python's server takes.

    Its server validates `response_format.type` as "text" | "json_object" and rejects
    "json_schema" (HTTP 500); it enforces a schema given as {"type": "json_object",
    "schema": ...} with a grammar instead. Translated here, below the model seam.
    """

    def request_kwargs(self, request: GenRequest) -> dict[str, Any]:
        kwargs = super().request_kwargs(request)
        fmt = kwargs.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema") or {}
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        return kwargs


def make_local_model(config: ModelConfig) -> OpenAIModel:
    if config.base_url:  # a llama.cpp server the user runs: talk to it, start nothing
        return LlamaCppModel(config.model_copy(update={"api_key": config.api_key or "local"}))

    # "local_model" is accepted as a synonym of "model" in options.
    model = config.options.get("model") or config.options.get("local_model")
    server = shared_server(model, server_flags(config.options))

    async def base_url() -> str:
        # Starting blocks for 1-5 s (model load); keep the event loop free meanwhile.
        return await asyncio.to_thread(server.start)

    # The server needs no key; one is set so a user's api_key_env is never demanded here.
    served = config.model_copy(update={"model": server.flags.model_alias, "api_key": "local"})
    return LlamaCppModel(served, base_url=base_url)
