"""The pieces of the HumanEval split: the plain-data codec both Python processes use, and the
C/C++ signature reader that generates the checker's stub and the candidate's server."""

from __future__ import annotations

import math
import os
from collections import OrderedDict

import pytest

from codegen_eval.readers.humaneval import cxx
from codegen_eval.readers.humaneval import rpc_codec as codec

VALUES = [
    None, True, False, 0, -1, 10**5000, -(2**200), 0.5, -0.0, math.inf, -math.inf, 1e-320,
    2 - 3j, "", "ü\x00\udc80", b"\x00\xff", bytearray(b"ab"), [], [1, [2.5, ["x"]]], (),
    (1, (2,)), {1, "a", (1, 2)}, frozenset({3}), {}, {"k": {1: None}, (1, 2): [True]},
]  # fmt: skip


def _same(a: object, b: object) -> bool:
    """Equal, and of exactly the same builtin types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )  # type: ignore[arg-type]
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)  # type: ignore[attr-defined,index]
    return a == b


@pytest.mark.parametrize("value", [*VALUES, math.nan], ids=lambda v: type(v).__name__)
def test_codec_round_trips_builtin_values_exactly(value: object) -> None:
    for lenient in (True, False):
        r, w = os.pipe()
        codec.send(w, ["ret", codec.encode(value, lenient=lenient)])
        msg = codec.recv(r)
        os.close(r)
        os.close(w)
        assert msg is not None and _same(codec.decode(msg[1]), value)


def test_lenient_side_flattens_subclasses_and_strict_side_refuses_objects() -> None:
    class Liar(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    back = codec.decode(codec.encode([Liar(3), OrderedDict(a=1)], lenient=True))
    assert type(back[0]) is int and back[0] == 3 and back[0] != 4
    assert type(back[1]) is dict
    with pytest.raises(codec.Unsupported):
        codec.encode(object(), lenient=True)
    with pytest.raises(codec.Unsupported):
        codec.encode(object(), lenient=False, handle=lambda f: 0)
    handles: list[object] = []
    tagged = codec.encode([len], lenient=False, handle=lambda f: handles.append(f) or 0)
    assert tagged == ["l", [["fn", 0]]] and handles == [len]
    assert codec.decode(tagged, callback=lambda h: f"proxy{h}") == ["proxy0"]


@pytest.mark.parametrize(
    "bad",
    [
        ["i", 5], ["x"], ["N", 1], ["l", "no"], ["S", [["l", []]]], ["d", [[["l", []], ["N"]]]],
        ["f", "1" * 100], ["fn", 0], ["b", "zz"], "s", [], ["d", [["N"]]],
    ],
    ids=repr,
)  # fmt: skip
def test_decode_refuses_malformed_values(bad: object) -> None:
    with pytest.raises(codec.ProtocolError):
        codec.decode(bad)


def test_decode_refuses_deep_nesting_and_framing_errors() -> None:
    deep: list[object] = ["N"]
    for _ in range(codec.MAX_DEPTH + 5):
        deep = ["l", [deep]]
    with pytest.raises(codec.ProtocolError):
        codec.decode(deep)
    for raw in (
        (codec.MAX_MESSAGE + 1).to_bytes(4, "big"),  # announced too large
        b"\x00\x00\x00\x09truncat",  # cut short
        b"\x00\x00\x00\x02{}",  # not an array
        b"\x00\x00\x00\x03[1]",  # not led by its kind
    ):
        r, w = os.pipe()
        os.write(w, raw)
        os.close(w)
        with pytest.raises(codec.ProtocolError):
            codec.recv(r)
        os.close(r)


# -- signatures (layouts of HumanEval-X prompts; the problems are our own) -------------------
HELPER_THEN_ENTRY = """#include<stdio.h>
#include<string>
using namespace std;
string rot(string s){
    // a helper the test uses: stays in the checker
    string out = "}";
    for (char c : s) out += c;
    return out;
}
string unrot(string s){
    /* the entry point; the prompt ends inside it { */
"""


@pytest.mark.parametrize(
    ("prompt", "ret", "name", "params"),
    [
        ("/*\n doc\n*/\n#include<vector>\nusing namespace std;\nbool f(vector<float> numbers, float t){\n",
         "bool", "f", (("vector<float>", "numbers"), ("float", "t"))),
        ("#include<map>\nmap<char,int> histogram(map<string,string> dict, vector<int>l){\n",
         "map<char,int>", "histogram", (("map<string,string>", "dict"), ("vector<int>", "l"))),
        ("vector<vector<int>> get_row(const vector<vector<int>>& lst, int x){\n",
         "vector<vector<int>>", "get_row", (("const vector<vector<int>>&", "lst"), ("int", "x"))),
        ("long long g(void) {\n", "long long", "g", ()),
        ("char *dup(const char *s) {\n", "char *", "dup", (("const char *", "s"),)),
        (HELPER_THEN_ENTRY, "string", "unrot", (("string", "s"),)),
    ],
)  # fmt: skip
def test_parse_signature_of_the_open_function(
    prompt: str, ret: str, name: str, params: tuple[tuple[str, str], ...]
) -> None:
    sig = cxx.parse_signature(prompt)
    assert sig is not None and (sig.ret, sig.name, sig.params) == (ret, name, params)


def test_parse_signature_refuses_prompts_not_ending_inside_a_function() -> None:
    assert cxx.parse_signature("int f(int x){ return x; }\n") is None
    assert cxx.parse_signature("Write a function that adds two numbers.") is None
    assert cxx.parse_signature(HELPER_THEN_ENTRY, entry="rot") is None  # closed


@pytest.mark.parametrize(
    ("prompt", "lang", "reason"),
    [
        ("int sum(int *a, int n){\n", "cpp", "pointer"),
        ("void sort_in_place(vector<int>& v){\n", "cpp", "non-const reference"),
        ("int area(struct rect r) {\n", "c", "not a scalar or a string"),
        ("int sum(const int *a, int n) {\n", "c", "not a scalar or a string"),
    ],
)
def test_unsupported_signatures_are_named(prompt: str, lang: str, reason: str) -> None:
    sig = cxx.parse_signature(prompt)
    assert sig is not None
    why = cxx.unsupported(sig, lang)
    assert why is not None and reason in why


def test_supported_signatures() -> None:
    for prompt, lang in (
        ("double mul(double a, unsigned long b) {\n", "c"),
        ("bool ok(const char *s, _Bool strict) {\n", "c"),
        ("string f(const vector<pair<int,double>>& v, map<string,int> m){\n", "cpp"),
    ):
        sig = cxx.parse_signature(prompt)
        assert sig is not None and cxx.unsupported(sig, lang) is None
