"""Source names of mangled symbols in stack frames: C++/legacy Rust (`_Z...`) and Rust's v0
scheme (`_R...`, the kernel's Rust code). Parameter and generic-argument lists are left out:
a title names a function, not an instantiation. A name that does not parse is kept as is."""

from __future__ import annotations

import re

_RUST_HASH = re.compile(r"h[0-9a-f]{16}")
_DIGITS = re.compile(r"\d+")


def demangle(name: str) -> str:
    if name.startswith("_R"):
        try:
            return _RustV0(name[2:]).symbol()
        except (IndexError, ValueError, RecursionError):
            return name
    if name.startswith("_Z"):
        return _itanium(name)
    return name


def _itanium(name: str) -> str:
    """_Z8fakeNameiii -> fakeName, _ZN3foo3barEv -> foo::bar (legacy Rust hash dropped)."""
    nested = name.startswith("_ZN")
    pos = 3 if nested else 2
    parts: list[str] = []
    while pos < len(name) and (digits := _DIGITS.match(name, pos)):
        size = int(digits.group())
        pos = digits.end()
        parts.append(name[pos : pos + size])
        pos += size
        if not nested:
            break
    if not parts or not parts[-1]:
        return name
    if len(parts) > 1 and _RUST_HASH.fullmatch(parts[-1]):
        parts.pop()
    return "::".join(parts)


# Rust v0 basic types by their one-letter code.
_BASIC = dict(
    zip(
        "abcdefhijlmnostuvxyzp",
        "i8 bool char f64 str f32 u8 isize usize i32 u32 i128 u128 i16 u16 () ... i64 u64 ! _".split(),
        strict=True,
    )
)


class _RustV0:
    """A reader of the v0 grammar: paths (crate roots, nested names, inherent and trait
    impls, back-references) and enough of the type grammar to skip over or print a type."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def symbol(self) -> str:
        if self.text[self.pos].isdigit():  # an encoding version
            self.pos = _DIGITS.match(self.text, self.pos).end()  # type: ignore[union-attr]
        return self.path()

    def _take(self) -> str:
        ch = self.text[self.pos]
        self.pos += 1
        return ch

    def _base62(self) -> int:
        if self.text[self.pos] == "_":
            self.pos += 1
            return 0
        value = 0
        while (ch := self._take()) != "_":
            value = value * 62 + int(ch, 36) + (26 if ch.isupper() else 0)
        return value + 1

    def _disambiguator(self) -> None:
        if self.text[self.pos] == "s":
            self.pos += 1
            self._base62()

    def _ident(self) -> str:
        self._disambiguator()
        if self.text[self.pos] == "u":
            raise ValueError("punycode identifiers are not read")
        digits = _DIGITS.match(self.text, self.pos)
        if digits is None:
            raise ValueError("identifier length expected")
        self.pos = digits.end()
        if self.text[self.pos : self.pos + 1] == "_":
            self.pos += 1
        size = int(digits.group())
        ident = self.text[self.pos : self.pos + size]
        self.pos += size
        return ident

    def _backref(self, read: str) -> str:
        here = self.pos - 1  # the "B"
        target = self._base62()
        if target >= here:  # only earlier parts can be referred to: no loops
            raise ValueError("back-reference does not point backwards")
        saved, self.pos = self.pos, target
        out = self.path() if read == "path" else self.type()
        self.pos = saved
        return out

    def path(self) -> str:
        tag = self._take()
        if tag == "C":
            return self._ident()
        if tag == "N":
            namespace = self._take()
            parent = self.path()
            ident = self._ident()
            if namespace.isupper():  # closures and shims: {closure#0}-like, named by kind
                return f"{parent}::{{{'closure' if namespace == 'C' else 'shim'}}}"
            return f"{parent}::{ident}" if ident else parent
        if tag == "M":
            self._disambiguator()
            self.path()  # the impl's own path, not shown
            return f"<{self.type()}>"
        if tag == "X":
            self._disambiguator()
            self.path()
            self_type = self.type()
            return f"<{self_type} as {self.path()}>"
        if tag == "Y":
            self_type = self.type()
            return f"<{self_type} as {self.path()}>"
        if tag == "I":
            base = self.path()
            while self.text[self.pos] != "E":
                self._generic_arg()
            self.pos += 1
            return base
        if tag == "B":
            return self._backref("path")
        raise ValueError(f"unknown path tag {tag!r}")

    def _generic_arg(self) -> None:
        if self.text[self.pos] == "L":
            self.pos += 1
            self._base62()
        elif self.text[self.pos] == "K":
            self.pos += 1
            self._const()
        else:
            self.type()

    def _const(self) -> None:
        if self.text[self.pos] == "p":
            self.pos += 1
            return
        if self.text[self.pos] == "B":
            self.pos += 1
            self._base62()
            return
        self._take()  # the type letter
        if self.text[self.pos] == "n":
            self.pos += 1
        while self._take() != "_":
            pass

    def type(self) -> str:
        ch = self.text[self.pos]
        if ch in _BASIC:
            self.pos += 1
            return _BASIC[ch]
        if ch in "RQ":  # &T, &mut T
            self.pos += 1
            if self.text[self.pos] == "L":
                self.pos += 1
                self._base62()
            return ("&" if ch == "R" else "&mut ") + self.type()
        if ch in "PO":
            self.pos += 1
            return ("*const " if ch == "P" else "*mut ") + self.type()
        if ch in "AS":
            self.pos += 1
            inner = self.type()
            if ch == "A":
                self._const()
                return f"[{inner}; _]"
            return f"[{inner}]"
        if ch == "T":
            self.pos += 1
            items = []
            while self.text[self.pos] != "E":
                items.append(self.type())
            self.pos += 1
            return f"({', '.join(items)})"
        if ch == "B":
            self.pos += 1
            return self._backref("type")
        if ch in "FD":
            raise ValueError("function and trait-object types are not read")
        return self.path()
