"""C and C++ problems split in two programs: the entry point's signature, read from the prompt,
turned into the checker's stub and the candidate's server.

A HumanEval-X prompt ends inside the entry point's definition (``bool f(vector<float> x,
float t){`` and maybe a comment), so the checker's program is the prompt, a stub body that
calls the candidate over the RPC, a closing brace and the test; the prompt's helpers (CPP/32's
poly, CPP/50's encode_shift) stay trusted code. The candidate's program is its code after the
prompt, plus a main() that answers calls.

C++ parameter and return types go through he_rpc.hpp's templates (scalars, std::string,
vectors, lists, sets, maps, pairs, tuples, arrays, nested); a type without a codec fails the
checker's build and the scorer falls back to the in-process mode. C types are classified
here: arithmetic scalars, bool and NUL-terminated strings; pointers to anything else, arrays
and structs fall back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Signature", "candidate_source", "parse_signature", "trusted_source", "unsupported"]

_HEAD = re.compile(
    r"(?P<ret>[A-Za-z_][\w:<>,\t \*&]*?)[\t \*&]*\b(?P<name>[A-Za-z_]\w*)\s*"
    r"\((?P<params>[^()]*)\)\s*(?:const\s*)?\{"
)
_KEYWORDS = {"if", "for", "while", "switch", "return", "else", "do", "catch", "sizeof"}
_C_SCALAR_WORDS = {
    "unsigned", "signed", "char", "short", "int", "long", "float", "double", "size_t",
    "ssize_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
    "uint64_t", "const", "volatile",
}  # fmt: skip
_C_BOOL = {"bool", "_Bool"}
_COMMENTS_AND_STRINGS = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.DOTALL
)


@dataclass(frozen=True, slots=True)
class Signature:
    ret: str
    name: str
    params: tuple[tuple[str, str], ...]  # (type, name)
    head_end: int  # where the prompt's text after the opening brace starts


def _split_top(params: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in params:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p.strip() for p in out]


def _ret_type(raw_ret: str, head: str, name: str) -> str:
    # the return type is everything before the name on the head line, pointer marks included
    return head[: head.rindex(name)].strip() if name in head else raw_ret.strip()


def parse_signature(prompt: str, entry: str = "") -> Signature | None:
    """The signature of the function the prompt leaves open, or None."""
    for m in reversed(list(_HEAD.finditer(prompt))):
        name = m.group("name")
        if name in _KEYWORDS or (entry and name != entry):
            continue
        depth = 1
        for ch in _COMMENTS_AND_STRINGS.sub("", prompt[m.end() :]):
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if depth == 0:
                return None  # closed again: the prompt does not end inside this function
        params: list[tuple[str, str]] = []
        raw = m.group("params").strip()
        if raw and raw != "void":
            for p in _split_top(raw):
                pm = re.fullmatch(r"(?P<type>.*?[\s\*&>])(?P<name>[A-Za-z_]\w*)", p, re.DOTALL)
                if pm is None or not pm.group("type").strip():
                    return None
                params.append((" ".join(pm.group("type").split()), pm.group("name")))
        ret = " ".join(_ret_type(m.group("ret"), m.group(0).split("(")[0], name).split())
        if not ret or ret in _KEYWORDS:
            continue
        return Signature(ret, name, tuple(params), m.end())
    return None


def _c_kind(type_text: str) -> str | None:
    """'raw', 'bool' or 'cstr' for a C type this harness can carry, else None."""
    t = type_text.replace("*", " * ").split()
    stars = t.count("*")
    words = [w for w in t if w != "*"]
    base = [w for w in words if w not in ("const", "volatile")]
    if "[" in type_text or not base:
        return None
    if stars == 1 and base == ["char"] and t[-1] == "*":
        return "cstr"
    if stars:
        return None
    if len(base) == 1 and base[0] in _C_BOOL:
        return "bool"
    return "raw" if all(w in _C_SCALAR_WORDS for w in words) else None


def unsupported(sig: Signature, lang: str) -> str | None:
    """Why this signature cannot cross the RPC (None: it can, as far as the text says)."""
    for t, n in ((sig.ret, "return type"), *((p, f"parameter {q}") for p, q in sig.params)):
        if lang == "c":
            if not (t == "void" and n == "return type") and _c_kind(t) is None:
                return f"C {n} {t!r} is not a scalar or a string"
            continue
        if "*" in t or "[" in t or "&&" in t:
            return f"{n} {t!r} is a pointer, array or rvalue reference"
        if "&" in t and not re.search(r"\bconst\b", t):
            return f"{n} {t!r} is a non-const reference (the function may write to it)"
    return None


# -- generated code ---------------------------------------------------------------------------
def _c_put(kind: str, expr: str) -> str:
    if kind == "bool":
        return f"he_put_bool(&he__b, {expr});"
    if kind == "cstr":
        return f"he_put_opt_cstr(&he__b, {expr});"
    return f"he_put_raw(&he__b, &{expr}, sizeof {expr});"


def _c_get(kind: str, type_text: str, var: str, rd: str) -> str:
    if kind == "bool":
        return f"{type_text} {var} = he_get_bool(&{rd});"
    if kind == "cstr":
        return f"{type_text} {var} = he_get_opt_cstr(&{rd});"
    return f"{type_text} {var}; he_get_raw(&{rd}, &{var}, sizeof {var});"


def trusted_source(sig: Signature, prompt: str, test: str, lang: str) -> str:
    """The checker: prompt, stub body, the test (its main() runs as is)."""
    if lang == "c":
        body = ["    he_buf he__b = {0, 0, 0};"]
        body += ["    " + _c_put(str(_c_kind(t)), n) for t, n in sig.params]
        body.append("    he_rd he__r = he_call(&he__b);")
        if sig.ret == "void":
            body += ["    he_end(&he__r);", "    return;"]
        else:
            body.append("    " + _c_get(str(_c_kind(sig.ret)), sig.ret, "he__ret", "he__r"))
            if re.search(r"\b(?:float|double)\b", sig.ret):
                body.append("    HE_CHECK_NAN(he__ret);")  # a NaN answer is wrong (he_core.h)
            body += ["    he_end(&he__r);", "    return he__ret;"]
        head = '#define HE_TRUSTED 1\n#include "he_core.h"\n'
    else:
        args = ", ".join(n for _, n in sig.params)
        body = [f"    return he_rpc::call<{sig.ret}>({args});"]
        head = '#define HE_TRUSTED 1\n#include "he_rpc.hpp"\n'
    return f"{head}{prompt}\n" + "\n".join(body) + f"\n}}\n{test}\n"


def candidate_source(sig: Signature, program: str, lang: str) -> str:
    """The candidate's program with a main() that answers the checker's calls."""
    if lang == "c":
        lines = [
            "int main(void) {",
            "    he_rd he__in = {0, 0, 0, 0};",
            "    he_serve_ready();",
            "    while (he_serve_next(&he__in)) {",
        ]
        lines += [
            "        " + _c_get(str(_c_kind(t)), t, f"he__a{i}", "he__in")
            for i, (t, _) in enumerate(sig.params)
        ]
        call = f"{sig.name}({', '.join(f'he__a{i}' for i in range(len(sig.params)))})"
        lines += ["        he_rd_free(&he__in);", "        he_buf he__b = {0, 0, 0};"]
        if sig.ret == "void":
            lines.append(f"        {call};")
        else:
            lines += [
                f"        {sig.ret} he__ret = {call};",
                "        " + _c_put(str(_c_kind(sig.ret)), "he__ret"),
            ]
        lines += ["        he_reply(&he__b);", "    }", "    return 0;", "}"]
        return (
            '#define HE_CANDIDATE 1\n#include "he_core.h"\n'
            + program
            + "\n"
            + "\n".join(lines)
            + "\n"
        )
    types = ", ".join(t for t, _ in sig.params)
    params = ", ".join(f"std::decay_t<{t}> &he__a{i}" for i, (t, _) in enumerate(sig.params))
    args = ", ".join(f"he__a{i}" for i in range(len(sig.params)))
    targs = f"{sig.ret}{', ' if types else ''}{types}"
    # he_rpc.hpp comes first through -include (precompiled where possible), HE_CANDIDATE as -D
    return (
        f"{program}\n"
        "int main() {\n"
        f"    return he_rpc::serve<{targs}>([]({params}) -> {sig.ret} {{ return {sig.name}({args}); }});\n"
        "}\n"
    )
