"""Structured edits -> unified diffs that `patch -p1` applies; bad edits refused with a reason."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from agents.kernel.edits import (
    Edit,
    EditError,
    apply_edits,
    functions_in,
    resolve_path,
    restore_string_escapes,
    strip_build_paths,
)
from agents.kernel.tools import SourceTools
from codegen_eval.kernelgym.env import SourceView

BUGS = Path(__file__).resolve().parents[2] / "codegen_eval" / "kernelgym" / "bugs"
SRC = BUGS / "t0-null-deref" / "src"
FILES = ["kgym_null.c"]


def _read(path: str) -> str:
    return (SRC / path).read_text()


def _applies(diff: str, tmp_path: Path) -> str:
    work = tmp_path / "src"
    subprocess.run(["cp", "-r", str(SRC), str(work)], check=True)
    proc = subprocess.run(
        ["patch", "-p1", "--batch"], cwd=work, input=diff, text=True, capture_output=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (work / "kgym_null.c").read_text()


def test_search_replace_with_spaces_for_tabs_makes_the_developer_fix(tmp_path: Path) -> None:
    edit = Edit(
        "kgym_null.c",
        search="    e = kgym_null_lookup(key);\n",
        replace="    e = kgym_null_lookup(key);\n    if (!e)\n        return -ENOENT;",
    )
    diff = apply_edits([edit], FILES, _read)
    assert diff == (BUGS / "t0-null-deref" / "fix.patch").read_text().split("\n", 1)[1]
    assert "\tif (!e)\n\t\treturn -ENOENT;\n" in _applies(diff, tmp_path)


def test_line_range_insert_and_replace(tmp_path: Path) -> None:
    insert = Edit(
        "kgym_null.c", replace="\tif (!e)\n\t\treturn -ENOENT;", first_line=42, last_line=41
    )
    assert "\tif (!e)\n\t\treturn -ENOENT;\n\te->value++;" in _applies(
        apply_edits([insert], FILES, _read), tmp_path
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (Edit("kgym_null.c", search="e = lookup(key);", replace="x"), "not found in kgym_null.c"),
        (Edit("kgym_null.c", search="}", replace="x"), "occurs"),
        (Edit("nope.c", search="x", replace="y"), "no file 'nope.c'"),
        (Edit("kgym_null.c", replace="x", first_line=900, last_line=901), "outside kgym_null.c"),
        (Edit("kgym_null.c", search="\tstrim(key);", replace="\tstrim(key);"), "changes nothing"),
        (Edit("kgym_null.c", search="\n  \n", replace="x"), "search text is empty"),
        (
            Edit("kgym_null.c", search="\tstrim(key);", replace="\n    strim(key);\n"),
            "changes only blank lines or indentation",
        ),
    ],
)
def test_bad_edits_are_refused_with_a_reason(edit: Edit, message: str) -> None:
    with pytest.raises(EditError, match=message):
        apply_edits([edit], FILES, _read)


def test_not_found_shows_the_nearest_real_lines() -> None:
    with pytest.raises(EditError) as info:
        apply_edits(
            [Edit("kgym_null.c", search="e = kgym_lookup(key);", replace="x")], FILES, _read
        )
    assert "   41\t\te = kgym_null_lookup(key);" in str(info.value)


def test_crash_report_paths_map_to_the_tools_paths() -> None:
    absolute = "/tmp/tmpq1w2/kgym-mod-8x_k2/src/kgym_null.c"
    assert resolve_path(absolute, FILES) == "kgym_null.c"
    assert resolve_path("b/kgym_null.c", FILES) == "kgym_null.c"
    assert resolve_path("drivers/misc/kgym_null.c", FILES) == "kgym_null.c"
    assert resolve_path("/proc/kgym_null", [*FILES, "Makefile"]) == "kgym_null.c"  # the stem
    assert resolve_path("/proc/other", FILES) == "/proc/other"
    assert strip_build_paths(f"RIP: kgym_null_write+0x2f ({absolute}:42)") == (
        "RIP: kgym_null_write+0x2f (kgym_null.c:42)"
    )
    tools = SourceTools(SourceView(SRC), FILES)
    assert "e = kgym_null_lookup(key);" in tools.read_file(absolute, 40, 42)
    assert "kgym_null.c:41:" in tools.grep("kgym_null_lookup\\(key\\)", absolute)


def test_replacement_that_lost_its_indentation_gets_the_files(tmp_path: Path) -> None:
    edit = Edit(
        "kgym_null.c", search="e->value++;", replace="if (!e)\nreturn -ENOENT;\ne->value++;"
    )
    diff = apply_edits([edit], FILES, _read)
    assert "+\tif (!e)\n+\treturn -ENOENT;\n \te->value++;\n" in diff
    _applies(diff, tmp_path)


def test_part_of_one_line_is_replaced_where_it_stands(tmp_path: Path) -> None:
    edit = Edit("kgym_null.c", search="e->value++", replace="if (e)\n\t\te->value++")
    text = _applies(apply_edits([edit], FILES, _read), tmp_path)
    assert "\tif (e)\n\t\te->value++;\n" in text


def test_statements_for_part_of_a_line_replace_the_whole_line(tmp_path: Path) -> None:
    # the 1.5B model's habit: search text = the call, replacement = statements around it.
    # Spliced in place this read `e = if (...)`; it means the whole line.
    edit = Edit(
        "kgym_null.c",
        search="kgym_null_lookup(key);",
        replace="if (!key[0]) return -EINVAL; e = kgym_null_lookup(key);",
    )
    text = _applies(apply_edits([edit], FILES, _read), tmp_path)
    assert "\tif (!key[0]) return -EINVAL; e = kgym_null_lookup(key);\n\te->value++;" in text
    assert "e = if" not in text


def test_replace_function_with_copied_line_numbers_makes_the_developer_fix(
    tmp_path: Path,
) -> None:
    tools = SourceTools(SourceView(SRC), FILES)
    shown = tools.read_function("kgym_null_write").split("\n")[1:]  # numbered, as the model saw
    at = next(i for i, line in enumerate(shown) if "e = kgym_null_lookup(key);" in line)
    rewritten = [
        *shown[: at + 1],
        "   42\t\tif (!e)",
        "   43\t\t\treturn -ENOENT;",
        *shown[at + 1 :],
    ]
    answer = tools.replace_function("kgym_null_write", "```c\n" + "\n".join(rewritten) + "\n```")
    assert answer.startswith("Edit accepted"), answer
    patch = tools.take_patch()
    assert patch == (BUGS / "t0-null-deref" / "fix.patch").read_text().split("\n", 1)[1]
    _applies(patch, tmp_path)


@pytest.mark.parametrize(
    ("name", "code", "message"),
    [
        ("kgym_null_write", "if (!e) return -ENOENT;", "whole definition of kgym_null_write"),
        ("kgym_null_write", "ssize_t kgym_null_write(void)\n{\n\tif (x) {\n}", "do not balance"),
        ("kgym_nope", "void kgym_nope(void)\n{\n}", "no definition of 'kgym_nope'"),
    ],
)
def test_replace_function_refuses_what_is_not_a_whole_function(
    name: str, code: str, message: str
) -> None:
    tools = SourceTools(SourceView(SRC), FILES)
    answer = tools.replace_function(name, code)
    assert answer.startswith("Error:") and message in answer
    assert tools.take_patch() is None


def test_an_answer_with_two_functions_edits_both_and_leaves_new_ones_out(tmp_path: Path) -> None:
    defined = dict(functions_in(_read("kgym_null.c")))
    assert {"kgym_null_lookup", "kgym_null_write", "kgym_null_init"} <= set(defined)
    fixed = defined["kgym_null_write"].replace(
        "\te->value++;", "\tif (!e)\n\t\treturn -ENOENT;\n\te->value++;"
    )
    lookup = defined["kgym_null_lookup"].replace("\tint i;", "\tsize_t i;")
    helper = "static int helper(void)\n{\n\treturn 0;\n}"
    answer = f"The lookup can fail.\n```c\n/* ok */\n{lookup}\n\n{helper}\n\n{fixed}\n```\nDone."
    tools = SourceTools(SourceView(SRC), FILES)
    note = tools.rewrite_functions(answer)
    assert note is not None
    assert note.startswith("Edit accepted (new functions are not added: helper)"), note
    patch = tools.take_patch()
    assert patch is not None
    text = _applies(patch, tmp_path)
    assert "\tif (!e)\n\t\treturn -ENOENT;\n\te->value++;" in text and "\tsize_t i;" in text


def test_an_edit_call_written_as_json_text_is_taken_as_its_code(tmp_path: Path) -> None:
    # The 0.5B model, asked for a ```c block, wrote the tool call as text instead.
    fixed = dict(functions_in(_read("kgym_null.c")))["kgym_null_write"].replace(
        "\te->value++;", "\tif (!e)\n\t\treturn -ENOENT;\n\te->value++;"
    )
    call = {"tool": "replace_function", "arguments": {"name": "kgym_null_write", "new_code": fixed}}
    tools = SourceTools(SourceView(SRC), FILES)
    note = tools.rewrite_functions(json.dumps(call))
    assert note is not None and note.startswith("Edit accepted"), note
    patch = tools.take_patch()
    assert patch is not None
    assert "\tif (!e)\n\t\treturn -ENOENT;\n\te->value++;" in _applies(patch, tmp_path)
    # a call without code (read_file) or JSON that is no call is no edit
    read = {"tool": "read_file", "arguments": {"path": "/sandbox/src/kgym_null.c"}}
    assert tools.rewrite_functions(json.dumps(read)) is None
    assert tools.rewrite_functions('{"tool": "replace_function", "arguments": ') is None


def test_an_answer_without_functions_of_the_bug_is_no_edit() -> None:
    tools = SourceTools(SourceView(SRC), FILES)
    assert tools.rewrite_functions("Check e for NULL.") is None
    assert tools.rewrite_functions("```c\nint other(void)\n{\n\treturn 1;\n}\n```") is None
    # a block cut off inside the function is not a whole function: no edit either
    assert (
        tools.rewrite_functions("```c\nstatic ssize_t kgym_null_write(int x)\n{\n\tif (x) {")
        is None
    )


def test_a_numbered_copy_under_a_comment_line_is_still_code(tmp_path: Path) -> None:
    # the 1.5B model's answer: an unnumbered `// file` line over the numbered function
    tools = SourceTools(SourceView(SRC), FILES)
    shown = tools.read_function("kgym_null_write").split("\n")[1:]
    at = next(i for i, line in enumerate(shown) if "e = kgym_null_lookup(key);" in line)
    body = [*shown[: at + 1], "   42\t\tif (!e)", "   43\t\t\treturn -ENOENT;", *shown[at + 1 :]]
    note = tools.rewrite_functions("```c\n// kgym_null.c\n" + "\n".join(body) + "\n```")
    assert note is not None and note.startswith("Edit accepted"), note
    patch = tools.take_patch()
    assert patch == (BUGS / "t0-null-deref" / "fix.patch").read_text().split("\n", 1)[1]


def test_newlines_that_json_decoded_inside_c_strings_are_escapes_again() -> None:
    broken = (
        'pr_info("avg %u\n", x); // it\'s "fine"\n\tc = \'\t\';\n/* a "quote\n */ s = "a\\"b\n";'
    )
    assert restore_string_escapes(broken) == (
        'pr_info("avg %u\\n", x); // it\'s "fine"\n\tc = \'\\t\';\n/* a "quote\n */ s = "a\\"b\\n";'
    )
    edit = Edit(
        "kgym_null.c",
        search='\tpr_info("kgym_null: %s -> %d\\n", key, e->value);',
        replace='\tif (!e)\n\t\treturn -ENOENT;\n\tpr_info("kgym_null: %s -> %d\n", key, e->value);',
    )
    diff = apply_edits([edit], FILES, _read)
    assert '+\tif (!e)\n+\t\treturn -ENOENT;\n \tpr_info("kgym_null: %s -> %d\\n", key' in diff
