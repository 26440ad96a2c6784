from __future__ import annotations

from codegen_eval.extract import extract_code


def test_tagged_block_preferred_over_untagged() -> None:
    reply = "Here:\n```\nnot this\n```\nand\n```c\nint f(void){return 1;}\n```\n"
    e = extract_code(reply, "c")
    assert e.ok and e.code == "int f(void){return 1;}\n" and e.method == "fenced:c"


def test_alias_and_longest_of_several() -> None:
    reply = "```c++\nint a;\n```\n```cpp\nint main() { return 0; }\n```"
    assert extract_code(reply, "cpp").code == "int main() { return 0; }\n"


def test_untagged_block() -> None:
    e = extract_code("```\nmodule m; endmodule\n```", "verilog")
    assert e.ok and e.method == "fenced:untagged" and "module m" in e.code


def test_other_tag_used_when_nothing_else_but_not_shell() -> None:
    e = extract_code("```c\nint x;\n```", "cpp")  # a C++ answer labelled "c" still counts
    assert e.ok and e.code == "int x;\n"
    assert not extract_code("```bash\ngcc main.c\n```", "c").ok


def test_unterminated_fence_from_truncated_reply() -> None:
    e = extract_code("Sure!\n```c\nint main() {\n  return 0;", "c")
    assert e.ok and e.method == "unterminated" and "return 0;" in e.code


def test_bare_code_and_verilog_module() -> None:
    e = extract_code("#include <stdio.h>\nint main(){return 0;}", "c")
    assert e.ok and e.method == "bare" and e.code.startswith("#include")
    v = extract_code(
        "The design:\nmodule top(input a, output b);\n assign b = a;\nendmodule\nDone.", "verilog"
    )
    assert v.ok and v.code.startswith("module top") and v.code.rstrip().endswith("endmodule")


def test_no_code() -> None:
    for reply in ["", "   ", "I cannot help with that.", "The answer is 42."]:
        e = extract_code(reply, "c")
        assert not e.ok and e.status == "no_code" and e.code == ""


def test_think_blocks_are_ignored() -> None:
    reply = "<think>\n```c\nint wrong;\n```\n</think>\n```c\nint right;\n```"
    assert extract_code(reply, "c").code == "int right;\n"


def test_tilde_fences_and_info_string_with_attributes() -> None:
    assert extract_code("~~~python title=x.py\nprint(1)\n~~~", "python").code == "print(1)\n"
