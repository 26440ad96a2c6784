"""Prompt text that may hold futures, the prompt context of a @ppl call, and prompt helpers.

The rule for futures in text (the dataflow rule):
    A prompt is a list of parts; a part may be a `GenFuture` that has not resolved yet.
    Writing a future into the prompt never waits for it. Inside a @ppl function every
    f-string is compiled to `fstring(...)`: when none of its fields is a pending future it is
    an ordinary `str` (same result as Python's f-string), otherwise it is a `PromptText`,
    a lazy piece of text that keeps the future and is rendered when the gen that uses it
    runs. `"a" + fut` and the helpers below (Tagged, NumberedList, ...) follow the same rule.
    Use `str(x)` or `await x` to force a value.
"""

from __future__ import annotations

import copy
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from appl import future as _future
from appl.future import GenFuture, prompt_text_of
from appl.types import Message, Role

_CONVERSIONS = {-1: None, 115: str, 114: repr, 97: ascii}  # ast.FormattedValue.conversion


class _Field:
    """One `{value!conv:spec}` of an f-string whose value is still pending."""

    __slots__ = ("conversion", "spec", "value")

    def __init__(self, value: Any, conversion: int, spec: str):
        self.value = value
        self.conversion = conversion
        self.spec = spec

    def render(self) -> str:
        value = self.value
        if isinstance(value, GenFuture):
            value = prompt_text_of(value.value())
        elif isinstance(value, PromptText):
            value = value.render()
        convert = _CONVERSIONS.get(self.conversion)
        if convert is not None:
            value = convert(value)
        return format(value, self.spec)


Segment = Any  # str | GenFuture | PromptText | _Field


class PromptStr(str):
    """A str made by a prompt helper (Tagged, NumberedList, ...). It is an ordinary str, but
    marked, so that a bare statement calling a helper joins the prompt (calls returning plain
    strings do not)."""

    __slots__ = ()


class PromptText:
    """Text with pending futures inside. Rendered (never earlier) when all have resolved."""

    __slots__ = ("segments",)

    def __init__(self, segments: Iterable[Segment]):
        self.segments = tuple(segments)

    def pending(self) -> Iterator[GenFuture]:
        for seg in self.segments:
            yield from pending_futures(seg.value if isinstance(seg, _Field) else seg)

    def render(self) -> str:
        """The text; every future inside must have resolved (or be readable blockingly)."""
        out = []
        for seg in self.segments:
            if isinstance(seg, str):
                out.append(seg)
            elif isinstance(seg, _Field):
                out.append(seg.render())
            elif isinstance(seg, PromptText):
                out.append(seg.render())
            else:
                out.append(prompt_text_of(seg.value() if isinstance(seg, GenFuture) else seg))
        return "".join(out)

    async def resolve(self) -> str:
        for fut in list(self.pending()):
            await fut
        return self.render()

    def __await__(self) -> Generator[Any, None, str]:
        return self.resolve().__await__()

    def __str__(self) -> str:
        return self.render()

    def __format__(self, spec: str) -> str:
        return format(self.render(), spec)

    def __repr__(self) -> str:
        return f"PromptText({self.segments!r})"

    def __appl_json__(self) -> str:
        return self.render()  # json.dumps writes the text (see appl.future)

    def __add__(self, other: object) -> str | PromptText:
        return concat(self, other)

    def __radd__(self, other: object) -> str | PromptText:
        return concat(other, self)


def pending_futures(value: Any) -> Iterator[GenFuture]:
    """The unresolved futures inside a prompt part (recursively)."""
    if isinstance(value, GenFuture):
        if not value.done():
            yield value
    elif isinstance(value, PromptText):
        yield from value.pending()
    elif isinstance(value, RoleText):
        yield from pending_futures(value.content)


def _is_pending(value: Any) -> bool:
    return next(pending_futures(value), None) is not None


def fstring(segments: tuple[Any, ...]) -> str | PromptText:
    """Runtime of an f-string inside a @ppl function. Literal parts are `str`; each field
    arrives as a tuple (value, conversion, format_spec)."""
    if not any(type(s) is tuple and _is_pending(s[0]) for s in segments):
        return "".join(s if type(s) is str else _Field(s[0], s[1], s[2]).render() for s in segments)
    return PromptText(s if type(s) is str else _Field(s[0], s[1], s[2]) for s in segments)


def concat(*parts: Any) -> str | PromptText:
    """Join parts without forcing pending futures (str when nothing is pending)."""
    if any(_is_pending(p) for p in parts):
        return PromptText(
            p if isinstance(p, (str, GenFuture, PromptText)) else str(p) for p in parts
        )
    return PromptStr(
        "".join(
            p.render() if isinstance(p, PromptText) else prompt_text_of(_resolved(p)) for p in parts
        )
    )


_future._joiner[0] = concat  # `gen + text` (see appl.future._joiner)


def _resolved(part: Any) -> Any:
    return part.value() if isinstance(part, GenFuture) else part


def join(separator: str, items: Iterable[Any]) -> str | PromptText:
    """`separator.join(items)` that keeps pending futures."""
    parts: list[Any] = []
    for i, item in enumerate(items):
        if i:
            parts.append(separator)
        parts.append(item)
    return concat(*parts)


# --- prompt helpers ---------------------------------------------------------------------------


def Tagged(tag: str, *content: Any, sep: str = "\n") -> str | PromptText:
    """`<tag>\\ncontent\\n</tag>`: a tagged section (good for code, documents, examples)."""
    if not tag or any(c in tag for c in "<> \n"):
        raise ValueError(f"invalid tag name {tag!r}")
    return concat(f"<{tag}>", sep, join(sep, content), sep, f"</{tag}>")


def NumberedList(items: Iterable[Any], *, start: int = 1) -> str | PromptText:
    """ "1. a\\n2. b" (items may be pending futures)."""
    return join("\n", (concat(f"{i}. ", item) for i, item in enumerate(items, start)))


def BulletList(items: Iterable[Any], *, bullet: str = "-") -> str | PromptText:
    return join("\n", (concat(f"{bullet} ", item) for item in items))


def Section(title: str, *content: Any, level: int = 2) -> str | PromptText:
    """A markdown section: "## title" then the content lines."""
    if not 1 <= level <= 6:
        raise ValueError("level must be between 1 and 6")
    return join("\n", ("#" * level + " " + title, *content))


@dataclass(frozen=True, slots=True)
class RoleText:
    """Text that goes into the prompt with a fixed role, whatever the current role is."""

    role: Role
    content: Any


def SystemMessage(*content: Any) -> RoleText:
    return RoleText("system", join("\n", content))


def UserMessage(*content: Any) -> RoleText:
    return RoleText("user", join("\n", content))


def AIMessage(*content: Any) -> RoleText:
    return RoleText("assistant", join("\n", content))


# --- the context ------------------------------------------------------------------------------

Part = Any  # str | GenFuture | PromptText | Message


class PromptContext:
    """The prompt of one @ppl call: (role, part) items in order, plus the current role.

    Consecutive text items with the same role become one message, joined by newlines; a
    `Message` item (e.g. tool results) stays a message of its own.
    """

    __slots__ = ("items", "role")

    def __init__(self, items: list[tuple[Role, Part]] | None = None, role: Role = "user"):
        self.items: list[tuple[Role, Part]] = items if items is not None else []
        self.role: Role = role

    def add(self, part: Part, role: Role | None = None) -> None:
        if isinstance(part, RoleText):
            self.items.append((part.role, part.content))
        elif isinstance(part, Message):
            self.items.append((part.role, part))
        elif isinstance(part, (str, GenFuture, PromptText)):
            self.items.append((role or self.role, part))
        else:
            raise TypeError(f"cannot add {type(part).__name__} to a prompt")

    def copy(self) -> PromptContext:
        return PromptContext(list(self.items), self.role)

    def snapshot(self) -> tuple[tuple[Role, Part], ...]:
        return tuple(self.items)

    def __deepcopy__(self, memo: dict[int, Any]) -> PromptContext:
        return PromptContext(copy.copy(self.items), self.role)

    def __len__(self) -> int:
        return len(self.items)

    def render(self) -> list[Message]:
        """The messages, blocking on pending futures (sync debugging / inspection)."""
        return render_messages(self.snapshot())


def snapshot_pending(items: Iterable[tuple[Role, Part]]) -> list[GenFuture]:
    found: list[GenFuture] = []
    for _, part in items:
        found.extend(pending_futures(part))
    return found


def render_messages(items: Iterable[tuple[Role, Part]]) -> list[Message]:
    """Turn prompt items into chat messages. All futures inside must have resolved."""
    messages: list[Message] = []
    lines: list[str] = []
    current: Role | None = None

    def flush() -> None:
        if current is not None and lines:
            messages.append(Message(role=current, content="\n".join(lines)))
        lines.clear()

    for role, part in items:
        if isinstance(part, Message):
            flush()
            current = None
            messages.append(part)
            continue
        if role != current:
            flush()
            current = role
        if isinstance(part, str):
            lines.append(part)
        elif isinstance(part, PromptText):
            lines.append(part.render())
        else:
            lines.append(prompt_text_of(part.value()))
    flush()
    return messages
