"""`gen(n=k)`: k completions of one prompt, resolved into k futures by one model call.

The whole group is ONE call with one identity (site, path, occurrence, step 0), so a trace
records it as one gen_request/gen_response pair (the response lists every choice) and a
replay answers it the same way. Whether the server gets one request with `n=k` or k
one-choice requests is the model wrapper's business (appl.models._managed): it emulates `n`
where the model's capability says so, and also where a server silently answered fewer
choices than asked (the llama.cpp server returns one choice for n=2).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pydantic

from appl import events
from appl.errors import ApplError, StructuredOutputError
from appl.future import GenFuture, GenResult
from appl.identity import CallIdentity, compute_call_identity
from appl.prompt import Part, render_messages, snapshot_pending
from appl.structured import describe_error, is_model_class, parse_reply, response_format_for
from appl.types import GenRequest, Message, Role

if TYPE_CHECKING:
    from appl.runtime import GenOptions, Runtime


async def run_gen_n(
    rt: Runtime,
    futs: list[GenFuture],
    items: tuple[tuple[Role, Part], ...],
    options: GenOptions,
    model_alias: str,
) -> None:
    """The task of one gen(n=k): wait for the inputs, one call, then resolve each future.
    `model_alias`: the alias the request names (the runtime resolves the default, so this
    module needs nothing of the runtime's but its types)."""
    group = tuple(futs)
    for fut in group:
        fut._group = group
    site = futs[0].site
    identity: CallIdentity | None = None
    try:
        for dep in snapshot_pending(items):
            await dep._wait()
        messages = render_messages(items)
        if not messages:
            raise ApplError(
                f"gen() at {site.file}:{site.line} has an empty prompt{options.empty_hint}"
            )
        request = GenRequest(
            model=model_alias,
            messages=messages,
            temperature=options.temperature,
            top_p=options.top_p,
            max_tokens=options.max_tokens,
            stop=options.stop,
            seed=options.seed,
            response_format=response_format_for(options.response_format),
            n=options.n,
            extra=dict(options.extra),
        )
        identity = compute_call_identity(site, request, 0)
        response = await rt._call_model(options, request, identity, None)
    except asyncio.CancelledError:
        for fut in group:
            fut._set_exception(asyncio.CancelledError(f"gen {site.path} was cancelled"))
            fut._retrieved = True
        raise
    except Exception as exc:
        for fut in group:
            fut._set_exception(exc)
        rt.failed.append(group[0])
        if events.has_listeners():
            data = {"type": type(exc).__name__, "message": str(exc), "path": site.path}
            events.emit("gen_error", rt.run_id, data, identity)
        return
    choices = response.choices or ()
    if len(choices) < len(group):
        error = ApplError(
            f"gen(n={len(group)}) at {site.file}:{site.line}: the model answered "
            f"{len(choices)} choice(s)"
        )
        for fut in group[len(choices) :]:
            fut._set_exception(error)
        rt.failed.append(group[-1])
    structured = options.response_format if is_model_class(options.response_format) else None
    for index, (fut, choice) in enumerate(zip(group, choices, strict=False)):
        value: Any = choice.text
        if structured is not None:
            try:
                value = parse_reply(structured, choice.text)
            except pydantic.ValidationError as exc:
                fut._set_exception(
                    StructuredOutputError(
                        f"gen at {site.file}:{site.line}: choice {index} did not "
                        f"validate as {structured.__name__}: {describe_error(exc)}",
                        raw_text=choice.text,
                        attempts=1,
                    )
                )
                rt.failed.append(fut)
                continue
        fut._set_result(
            GenResult(
                text=choice.text,
                value=value,
                response=response,
                tool_calls=choice.tool_calls,
                messages=[Message("assistant", choice.text)],
                rounds=1,
                identity=identity,
            )
        )
