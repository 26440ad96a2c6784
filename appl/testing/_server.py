"""A real OpenAI-compatible HTTP/1.1 server with scripted replies, for tests and benchmarks.

Hand-rolled on asyncio streams (not a web framework) so that faults are easy to produce
exactly: a hang, a connection closed before the response, a stream cut half-way. It runs on
its own event loop in a daemon thread, so it works from sync code and never competes with the
client's event loop for scheduling (it still shares the GIL; see benchmarks/scripted_server.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from appl.testing._rules import STATUS_FAULTS, Reply, ReplyValue, Rule, prompt_text, split_tokens

_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    411: "Length Required",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_MALFORMED_BODY = b'{"id": "chatcmpl-scripted", "object": "chat.completion", "choices": [{"ind'


class ScriptedServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers by rules.

    >>> with ScriptedServer(rules=[Rule(match="capital of France", reply="Paris")]) as server:
    ...     server.base_url  # "http://127.0.0.1:PORT/v1"

    Requests that match no rule get `default_reply`; when that is None they get HTTP 400 with a
    message naming the prompt, so a missing rule fails fast instead of answering nonsense.
    `tokens_per_s` simulates generation speed: a reply of k tokens takes k / tokens_per_s
    seconds, and SSE chunks (one per token) are paced by it. `max_choices=1` answers one
    choice whatever `n` asks, as the llama.cpp server does. `context_window` makes it refuse,
    like llama-cpp-python's server, a request whose prompt tokens (its own count: words)
    reach that many: HTTP 400 "Requested tokens (N) exceed context window of W".
    """

    def __init__(
        self,
        rules: Sequence[Rule] = (),
        *,
        default_latency: float = 0.0,
        default_reply: ReplyValue = "ok",
        tokens_per_s: float | None = None,
        model_names: Sequence[str] = ("scripted",),
        port: int = 0,
        max_choices: int | None = None,
        context_window: int | None = None,
    ) -> None:
        self.rules: list[Rule] = list(rules)
        self.context_window = context_window
        self.overflows = 0  # requests refused for their length
        self.default_latency = default_latency
        self.default_reply = default_reply
        self.tokens_per_s = tokens_per_s
        self.model_names = list(model_names)
        self.max_choices = max_choices  # answer at most this many choices, whatever n asks
        self.requests: list[dict[str, Any]] = []  # parsed JSON bodies, in arrival order
        self.in_flight = 0  # chat requests received and not yet answered
        self.max_in_flight = 0  # the most chat requests in flight at once
        self.connections_opened = 0
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._stopping: asyncio.Event | None = None
        self._ids = itertools.count(1)

    # ------------------------------------------------------------------ lifecycle
    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("ScriptedServer is not started (use `with server:` or start())")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def prompts(self) -> list[str]:
        """The prompt text (message contents joined) of every received request."""
        return [prompt_text(body) for body in self.requests]

    def start(self) -> ScriptedServer:
        if self._thread is not None:
            raise RuntimeError("ScriptedServer already started")
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._open())
            except BaseException as exc:  # reported to the starting thread below
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name="ScriptedServer", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise failure[0]
        return self

    def stop(self) -> None:
        """Close the listener and every connection (hung requests included), join the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop may already be closed
            asyncio.run_coroutine_threadsafe(self._close(), loop).result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        self._thread = None
        self._loop = None

    async def _open(self) -> None:
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(
            self._serve_connection, "127.0.0.1", self._port, limit=1 << 24, backlog=4096
        )
        self._port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        assert self._server is not None and self._stopping is not None
        self._server.close()
        self._stopping.set()  # releases "hang" faults
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:  # handlers still sleeping (latency) end now; they swallow the cancel
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> ScriptedServer:
        return self.start()

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)

    # ------------------------------------------------------------------ HTTP/1.1
    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._writers.add(writer)
        self.connections_opened += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                try:
                    method, target, version = lines[0].split(" ", 2)
                except ValueError:
                    await self._send_json(writer, 400, {"error": {"message": "bad request line"}})
                    return
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                if "chunked" in headers.get("transfer-encoding", ""):
                    await self._send_json(
                        writer, 411, {"error": {"message": "send Content-Length"}}
                    )
                    return
                length = int(headers.get("content-length") or 0)
                try:
                    body = await reader.readexactly(length) if length else b""
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                keep_alive = (
                    headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
                )
                path = target.split("?", 1)[0]
                if not await self._route(method, path, body, writer) or not keep_alive:
                    return
        except (ConnectionError, asyncio.CancelledError):
            # Cancelled only by stop(): end quietly, since asyncio's stream callback logs
            # a cancelled connection handler as an error.
            return
        finally:
            self._writers.discard(writer)
            writer.transport.abort() if writer.transport.is_closing() else writer.close()

    async def _route(
        self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; False when the connection must not be reused."""
        if method == "GET" and path.rstrip("/") == "/v1/models":
            data = [
                {"id": n, "object": "model", "created": 0, "owned_by": "scripted"}
                for n in self.model_names
            ]
            await self._send_json(writer, 200, {"object": "list", "data": data})
            return True
        if method == "POST" and path.rstrip("/") == "/v1/chat/completions":
            return await self._chat(body, writer)
        await self._send_json(
            writer, 404, {"error": {"message": f"no route {method} {path}", "type": "not_found"}}
        )
        return True

    async def _send(
        self, writer: asyncio.StreamWriter, status: int, body: bytes, extra: str = ""
    ) -> None:
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n{extra}\r\n"
        )
        writer.write(head.encode("latin-1") + body)
        await writer.drain()

    async def _send_json(
        self, writer: asyncio.StreamWriter, status: int, obj: Any, extra: str = ""
    ) -> None:
        await self._send(writer, status, json.dumps(obj).encode(), extra)

    # ------------------------------------------------------------------ chat completions
    async def _chat(self, raw: bytes, writer: asyncio.StreamWriter) -> bool:
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body is not a JSON object")
        except ValueError as exc:
            await self._send_json(writer, 400, {"error": {"message": f"invalid JSON body: {exc}"}})
            return True
        self.requests.append(body)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(body, writer)
        finally:
            self.in_flight -= 1

    async def _answer(self, body: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        text = prompt_text(body)
        if self.context_window is not None:
            tokens = sum(len(split_tokens(m.get("content") or "")) + 3 for m in _messages(body))
            if tokens >= self.context_window:
                self.overflows += 1
                message = (
                    f"Requested tokens ({tokens}) exceed context window of {self.context_window}"
                )
                error = {"message": message, "type": "invalid_request_error"}
                await self._send_json(writer, 400, {"error": error})
                return True
        rule = next((r for r in self.rules if r.matches(body, text)), None)
        if rule is not None:
            rule.hits += 1
        fault = rule.next_fault() if rule is not None else None
        stream = bool(body.get("stream"))
        if fault == "hang":
            assert self._stopping is not None
            await self._stopping.wait()  # released only by stop(), which aborts the connection
            return False
        if fault == "drop" or (fault == "drop_stream" and not stream):
            writer.transport.abort()
            return False
        latency = (
            rule.latency if rule is not None and rule.latency is not None else self.default_latency
        )
        if latency > 0:
            await asyncio.sleep(latency)
        if fault in STATUS_FAULTS:
            status = int(fault)
            extra = ""
            if status == 429:
                assert rule is not None
                extra = f"retry-after: {rule.retry_after:g}\r\n"
            error = {"message": f"scripted fault {fault}", "type": "scripted_fault", "code": fault}
            await self._send_json(writer, status, {"error": error}, extra)
            return True
        if fault == "malformed":
            await self._send(writer, 200, _MALFORMED_BODY)
            return True
        if rule is None and self.default_reply is None:
            message = f"ScriptedServer: no rule matched the prompt {text[:300]!r}"
            await self._send_json(writer, 400, {"error": {"message": message, "type": "no_rule"}})
            return True
        n = max(1, int(body.get("n") or 1))
        if self.max_choices is not None:  # like the llama.cpp server: n>1 silently ignored
            n = min(n, self.max_choices)
        replies = [
            rule.produce(body, self.default_reply) if rule else _default(self.default_reply, body)
            for _ in range(n)
        ]
        prompt_tokens = sum(len(split_tokens(m.get("content") or "")) + 3 for m in _messages(body))
        if stream:
            return await self._stream(
                body, replies, prompt_tokens, writer, drop=fault == "drop_stream"
            )
        choices = [self._choice(i, r) for i, r in enumerate(replies)]
        completion_tokens = sum(_reply_tokens(r) for r in replies)
        if self.tokens_per_s:
            await asyncio.sleep(max(_reply_tokens(r) for r in replies) / self.tokens_per_s)
        payload = {
            "id": f"chatcmpl-scripted-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or "scripted"),
            "choices": choices,
            "usage": _usage(prompt_tokens, completion_tokens),
        }
        await self._send_json(writer, 200, payload)
        return True

    def _choice(self, index: int, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        calls = self._tool_calls(reply)
        if calls:
            message["tool_calls"] = calls
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        return {"index": index, "message": message, "finish_reason": finish, "logprobs": None}

    def _tool_calls(self, reply: Reply) -> list[dict[str, Any]]:
        out = []
        for call in reply.tool_calls:
            args = call.get("arguments", {})
            out.append(
                {
                    "id": call.get("id") or f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            )
        return out

    async def _stream(
        self,
        body: dict[str, Any],
        replies: list[Reply],
        prompt_tokens: int,
        writer: asyncio.StreamWriter,
        *,
        drop: bool,
    ) -> bool:
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        base = {
            "id": f"chatcmpl-scripted-{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": str(body.get("model") or "scripted"),
        }
        pace = 1.0 / self.tokens_per_s if self.tokens_per_s else 0.0

        async def event(payload: Any) -> None:
            data = (
                b"data: "
                + (payload if isinstance(payload, bytes) else json.dumps(payload).encode())
                + b"\n\n"
            )
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await writer.drain()

        def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                **base,
                "choices": [
                    {"index": index, "delta": delta, "finish_reason": finish, "logprobs": None}
                ],
            }

        completion_tokens = 0
        # Tokens are due at absolute times (start + k * pace): sleeping a fixed interval per
        # token would let every late wake-up on a loaded machine add up over a long reply.
        loop = asyncio.get_running_loop()
        paced_start = loop.time()
        for index, reply in enumerate(replies):
            await event(chunk(index, {"role": "assistant", "content": ""}))
            for token in split_tokens(reply.content or ""):
                if pace:
                    await asyncio.sleep(
                        max(0.0, paced_start + (completion_tokens + 1) * pace - loop.time())
                    )
                await event(chunk(index, {"content": token}))
                completion_tokens += 1
                if drop:  # cut the stream after the first piece of text
                    writer.transport.abort()
                    return False
            calls = self._tool_calls(reply)
            for k, call in enumerate(calls):
                fn = call["function"]
                half = (
                    len(fn["arguments"]) // 2
                )  # arguments arrive in two pieces, as real servers do
                head = {
                    "index": k,
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": fn["name"], "arguments": fn["arguments"][:half]},
                }
                await event(chunk(index, {"tool_calls": [head]}))
                await event(
                    chunk(
                        index,
                        {
                            "tool_calls": [
                                {"index": k, "function": {"arguments": fn["arguments"][half:]}}
                            ]
                        },
                    )
                )
                completion_tokens += max(1, len(split_tokens(fn["arguments"])))
            if drop:
                writer.transport.abort()
                return False
            await event(
                chunk(index, {}, reply.finish_reason or ("tool_calls" if calls else "stop"))
            )
        options = body.get("stream_options") or {}
        if options.get("include_usage"):
            await event({**base, "choices": [], "usage": _usage(prompt_tokens, completion_tokens)})
        await event(b"[DONE]")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    msgs = body.get("messages") or []
    return [
        m
        if isinstance(m.get("content"), str | None)
        else {"content": prompt_text({"messages": [m]})}
        for m in msgs
        if isinstance(m, dict)
    ]


def _default(value: ReplyValue, body: dict[str, Any]) -> Reply:
    if isinstance(value, str):  # the common case, without building a throwaway Rule
        return Reply(content=value)
    return Rule(reply=value).produce(body, None)


def _reply_tokens(reply: Reply) -> int:
    tokens = len(split_tokens(reply.content or ""))
    for call in reply.tool_calls:
        args = call.get("arguments", {})
        tokens += max(1, len(split_tokens(args if isinstance(args, str) else json.dumps(args))))
    return tokens


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
