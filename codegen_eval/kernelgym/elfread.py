"""Just enough of an x86-64 relocatable ELF (a `.o` or a `.ko`) for the object screen:
sections, symbols, and the relocations of data sections. Read in Python rather than by nm or
readelf: the bytes are candidate-made. Anything malformed is a ValueError (gcc never makes
such an object)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["Elf", "code_targets", "read_elf", "stray_code_pointers"]

_SHT_SYMTAB, _SHT_RELA = 2, 4
_SHF_EXECINSTR = 0x4
_STT_FUNC, _STT_SECTION = 2, 3
_MAX_ENTRIES = 1 << 20


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    kind: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    entsize: int

    @property
    def code(self) -> bool:
        return bool(self.flags & _SHF_EXECINSTR)


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str
    kind: int  # STT_*
    shndx: int  # 0: undefined (an import)
    value: int
    size: int


@dataclass(slots=True)
class Elf:
    data: bytes
    sections: list[Section]
    symbols: list[Symbol]

    @property
    def undefined(self) -> set[str]:
        return {s.name for s in self.symbols if s.shndx == 0 and s.name}

    @property
    def functions(self) -> set[str]:
        return {s.name for s in self.symbols if s.kind == _STT_FUNC and s.shndx and s.name}


def _cstr(table: bytes, at: int) -> str:
    return table[at : table.index(b"\0", at)].decode("ascii", "replace")


def read_elf(data: bytes) -> Elf:
    if data[:6] != b"\x7fELF\x02\x01":
        raise ValueError("not a 64-bit little-endian ELF object")
    try:
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        if shentsize != 64 or shnum == 0 or shstrndx >= shnum:
            raise ValueError("no section headers")
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i) for i in range(shnum)]
        names = data[raw[shstrndx][4] : raw[shstrndx][4] + raw[shstrndx][5]]
        sections = [
            Section(_cstr(names, r[0]), r[1], r[2], r[4], r[5], r[6], r[7], r[9]) for r in raw
        ]
        symbols: list[Symbol] = []
        for sec in sections:
            if sec.kind != _SHT_SYMTAB:
                continue
            if sec.entsize != 24 or sec.size // 24 > _MAX_ENTRIES or sec.link >= shnum:
                raise ValueError("a malformed symbol table")
            strtab = data[sections[sec.link].offset :][: sections[sec.link].size]
            for k in range(sec.size // 24):
                name, info, _other, shndx, value, size = struct.unpack_from(
                    "<IBBHQQ", data, sec.offset + 24 * k
                )
                symbols.append(Symbol(_cstr(strtab, name), info & 0xF, shndx, value, size))
        return Elf(data, sections, symbols)
    except (struct.error, IndexError) as exc:
        raise ValueError(f"a truncated ELF object ({exc})") from None


# Sections the kernel reads function pointers from (operations structures, the module's own
# init/exit). Tables that point into the middle of code by design (__ex_table, alternatives,
# ORC, jump labels, call sites) are elsewhere.
_POINTER_SECTIONS = (".data", ".rodata", ".bss", ".init.data", ".exit.data", ".ref.data",
                     ".init.rodata", ".gnu.linkonce.this_module")  # fmt: skip


def stray_code_pointers(elf: Elf, data_imports: frozenset[str]) -> list[str]:
    """Pointers stored in data that lead off a function: an import plus an offset
    (`_printk+0x1234`: any kernel function), a function plus more than its size, or a code
    section plus more than its length. An operations structure holding one is a call the
    kernel itself makes to wherever the patch chose."""
    found: list[str] = []
    for target, index, addend in _data_relocations(elf):
        if not target.name.startswith(_POINTER_SECTIONS):
            continue
        try:
            sym = elf.symbols[index]
        except IndexError:
            raise ValueError("a relocation names a symbol that does not exist") from None
        if _strays(elf, sym, addend, data_imports):
            known = sym.shndx < len(elf.sections)
            name = sym.name or (elf.sections[sym.shndx].name if known else "*ABS*")
            found.append(f"{name}{addend:+#x}")
    return found


_SHN_ABS = 0xFFF1


def _strays(elf: Elf, sym: Symbol, addend: int, data_imports: frozenset[str]) -> bool:
    if sym.shndx == _SHN_ABS:
        return True  # a fixed address
    if sym.shndx == 0:
        return bool(sym.name) and addend != 0 and sym.name not in data_imports
    if sym.kind == _STT_FUNC:
        return not 0 <= addend < max(sym.size, 1)
    if sym.kind == _STT_SECTION and sym.shndx < len(elf.sections):
        sec = elf.sections[sym.shndx]
        return sec.code and not 0 <= addend < sec.size
    return False


def _data_relocations(elf: Elf) -> list[tuple[Section, int, int]]:
    """(relocated section, symbol index, addend) for every relocation outside code and debug
    information."""
    out = []
    for sec in elf.sections:
        if sec.kind != _SHT_RELA or sec.info >= len(elf.sections):
            continue
        target = elf.sections[sec.info]
        if target.code or target.name.startswith(".debug"):
            continue
        if sec.entsize != 24 or sec.size // 24 > _MAX_ENTRIES:
            raise ValueError("a malformed relocation table")
        for k in range(sec.size // 24):
            try:
                _offset, info, addend = struct.unpack_from("<QQq", elf.data, sec.offset + 24 * k)
            except struct.error as exc:
                raise ValueError(f"a truncated relocation table ({exc})") from None
            out.append((target, info >> 32, addend))
    return out


def code_targets(elf: Elf) -> list[tuple[str, int]]:
    """(code section, offset) of every code address stored outside code: operations
    structures, exception fixups, alternatives, jump labels. Each must start an instruction."""
    found = []
    for _target, index, addend in _data_relocations(elf):
        if index >= len(elf.symbols):
            raise ValueError("a relocation names no symbol")
        sym = elf.symbols[index]
        if not sym.shndx or sym.shndx >= len(elf.sections):
            continue
        sec = elf.sections[sym.shndx]
        # The section's end is no instruction but a fine pointer (end markers).
        if sec.code and sym.kind in (_STT_FUNC, _STT_SECTION) and sym.value + addend != sec.size:
            found.append((sec.name, sym.value + addend))
    return found
