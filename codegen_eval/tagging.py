"""Tagged verdict lines: how a trusted checker that shares an output stream with untrusted
code proves which line is its own.

The scorer draws a fresh 128-bit key per run and gives it only to the trusted checker (on a
pipe drained before any untrusted process exists). The checker prints its verdict as
``<body> mac=<16 hex>``, where the tag is SipHash-2-4 (a keyed PRF) of the body under that
key. A line without a valid tag is ignored, whatever it says. The C side is
codegen_eval/suites/hpc_kernels/harness/siphash.h.
"""

from __future__ import annotations

import hmac
import secrets

_MASK = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash24(key: bytes, data: bytes) -> int:
    """SipHash-2-4 with a 16-byte key; must match harness/siphash.h."""
    if len(key) != 16:
        raise ValueError("siphash24 needs a 16-byte key")
    k0 = int.from_bytes(key[:8], "little")
    k1 = int.from_bytes(key[8:], "little")
    v = [
        0x736F6D6570736575 ^ k0,
        0x646F72616E646F6D ^ k1,
        0x6C7967656E657261 ^ k0,
        0x7465646279746573 ^ k1,
    ]

    def rounds(n: int) -> None:
        for _ in range(n):
            v[0] = (v[0] + v[1]) & _MASK
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & _MASK
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & _MASK
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & _MASK
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[2] = _rotl(v[2], 32)

    full = len(data) - len(data) % 8
    for i in range(0, full, 8):
        m = int.from_bytes(data[i : i + 8], "little")
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    b = (len(data) & 0xFF) << 56 | int.from_bytes(data[full:], "little")
    v[3] ^= b
    rounds(2)
    v[0] ^= b
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def new_key() -> bytes:
    return secrets.token_bytes(16)


def tag_line(key: bytes, body: str) -> str:
    return f"{body} mac={siphash24(key, body.encode()):016x}"


def tagged_lines(output: str, key: bytes, prefix: str) -> list[str]:
    """The bodies of the lines of `output` that start with `prefix` and carry a valid tag."""
    found = []
    for line in output.splitlines():
        if not line.startswith(prefix):
            continue
        body, sep, tag = line.rstrip().rpartition(" mac=")
        if (
            sep
            and len(tag) == 16
            and hmac.compare_digest(f"{siphash24(key, body.encode()):016x}", tag.lower())
        ):
            found.append(body)
    return found
