"""Plan text -> steps: the reference grammar, the streaming parser, JSON plans, validation."""

from __future__ import annotations

import pytest

from appl.compiler import (
    ParsedCall,
    PlanIssue,
    PlanSyntaxError,
    PlanValidator,
    Ref,
    StreamingPlanParser,
    Template,
    parse_json_plan,
    parse_line,
    parse_value,
    resolve,
    tool,
)
from appl.compiler.parse import Join, Thought


@tool
def search(query: str) -> str:
    """Search the web."""
    return query


@tool
def math(expression: str) -> float:
    """Evaluate arithmetic."""
    return 0.0


@tool
def scale(value: float, factor: int = 2) -> float:
    """Multiply."""
    return value * factor


TOOLS = {t.name: t for t in (search, math, scale)}


# ---------------------------------------------------------------------- reference grammar
@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("$3", Ref(3)),
        ("$2.price", Ref(2, ("price",))),
        ("${2}.items[0]", Ref(2, ("items", 0))),
        ("${2.items[0].name}", Ref(2, ("items", 0, "name"))),
        ('$2["key with space"][-1]', Ref(2, ("key with space", -1))),
        ("$12", Ref(12)),
    ],
)
def test_bare_references(text: str, ref: Ref) -> None:
    assert parse_value(text) == ref


def test_dollar_inside_a_string_is_literal_unless_braced() -> None:
    assert parse_value('"the lamp costs $10"') == "the lamp costs $10"
    assert parse_value('"$1 - $2"') == "$1 - $2"  # the reference system's form stays text
    assert parse_value('"${1} - ${2}"') == Template((Ref(1), " - ", Ref(2)))
    assert parse_value('"total: ${3.price} USD"') == Template(
        ("total: ", Ref(3, ("price",)), " USD")
    )
    assert parse_value('"$${1} is how you write it"') == "${1} is how you write it"
    assert parse_value("'single $5 quotes'") == "single $5 quotes"


@pytest.mark.parametrize(
    "bad",
    ['"${abc}"', '"${1"', "$", "$x", "$1.", "$1[", "word", '"open'],
)
def test_malformed_values_raise_with_position(bad: str) -> None:
    with pytest.raises(PlanSyntaxError):
        parse_value(bad)


def test_literals() -> None:
    assert parse_value('[1, 2.5, -3e2, true, None, "x", {a: 1, "b": [null]}]') == [
        1,
        2.5,
        -300.0,
        True,
        None,
        "x",
        {"a": 1, "b": [None]},
    ]
    assert parse_value(r'"tab\there \"q\" \u00e9"') == 'tab\there "q" é'


def test_resolve_fields_indexes_and_templates() -> None:
    results = {1: {"items": [{"name": "lamp", "price": 10}]}, 2: 7}
    value = {
        "a": Ref(1, ("items", 0, "price")),
        "b": Template(("x=", Ref(2), " ", Ref(1, ("items", 0)))),
        "c": [Ref(2), "$2"],
    }
    assert resolve(value, results) == {
        "a": 10,
        "b": 'x=7 {"name": "lamp", "price": 10}',
        "c": [7, "$2"],
    }


def test_resolve_reports_missing_fields() -> None:
    from appl.compiler.plan import ReferenceError_

    with pytest.raises(ReferenceError_, match="price"):
        resolve(Ref(1, ("price",)), {1: {"cost": 3}})
    with pytest.raises(ReferenceError_, match="not a list"):
        resolve(Ref(1, (0,)), {1: 5})


# ---------------------------------------------------------------------- lines
def test_step_line_parses_positional_and_keywords() -> None:
    item = parse_line("3. scale($1.value, factor=3)  # double it", 5)
    assert item == ParsedCall(
        3,
        "scale",
        (Ref(1, ("value",)),),
        (("factor", 3),),
        "3. scale($1.value, factor=3)  # double it",
        5,
    )


def test_lines_that_are_not_steps_are_reported_not_dropped() -> None:
    assert isinstance(parse_line("Thought: easy"), Thought)
    assert isinstance(parse_line("4. join()"), Join)
    assert isinstance(parse_line("<END_OF_PLAN>"), Join)
    assert parse_line("   ") is None
    bad = parse_line('2. search("unterminated)', 2)
    assert isinstance(bad, PlanIssue) and bad.kind == "syntax" and bad.step_id == 2
    assert "unterminated string" in bad.message
    prose = parse_line("Here is my plan:", 1)
    assert isinstance(prose, PlanIssue) and prose.step_id is None


def test_streaming_parser_emits_each_step_when_its_newline_arrives() -> None:
    plan = 'Thought: go\n1. search("a")\n2. math("${1} + 1")\n3. join()\ntrailing'
    parser = StreamingPlanParser()
    emitted: list[tuple[int, object]] = []  # (characters fed so far, item)
    for i, ch in enumerate(plan):
        emitted += [(i + 1, item) for item in parser.feed(ch)]
    emitted += [(len(plan), item) for item in parser.close()]
    kinds = [type(item).__name__ for _, item in emitted]
    assert kinds == ["Thought", "ParsedCall", "ParsedCall", "Join", "PlanIssue"]
    # Step 1 came out exactly when its newline was fed, long before the plan was complete.
    first_newline = plan.index("\n", plan.index("1."))
    assert emitted[1][0] == first_newline + 1
    assert emitted[-1][1].kind == "warning"  # text after join() is reported, not run


# ---------------------------------------------------------------------- JSON plans
def test_json_plan_refs_templates_and_bad_steps() -> None:
    items = parse_json_plan(
        {
            "thought": "t",
            "steps": [
                {"id": 1, "tool": "search", "args": {"query": "a costs $10"}},
                {"id": 2, "tool": "scale", "args": {"value": {"$ref": "1.n[0]"}}},
                {"id": 3, "tool": "math", "args": ["${1} * ${2}"]},
                {"tool": "search", "args": {}},
                {"id": 5, "tool": "join"},
            ],
        }
    )
    assert isinstance(items[0], Thought)
    assert items[1] == ParsedCall(1, "search", (), (("query", "a costs $10"),), items[1].line, 1)
    assert items[2].keywords == (("value", Ref(1, ("n", 0))),)
    assert items[3].positional == (Template((Ref(1), " * ", Ref(2))),)
    assert isinstance(items[4], PlanIssue) and "id" in items[4].message
    assert isinstance(items[5], Join)
    assert isinstance(parse_json_plan("{not json")[0], PlanIssue)


# ---------------------------------------------------------------------- validation
def _check(validator: PlanValidator, line: str) -> tuple[object, list[PlanIssue]]:
    item = parse_line(line)
    assert isinstance(item, ParsedCall), item
    return validator.check(item)


def test_valid_steps_bind_arguments_and_record_dependencies() -> None:
    v = PlanValidator(TOOLS)
    s1, _ = _check(v, '1. search("a")')
    s2, _ = _check(v, "2. scale($1.n, 4)")
    assert s1.args == {"query": "a"} and s1.deps == frozenset()
    assert s2.args == {"value": Ref(1, ("n",)), "factor": 4} and s2.deps == {1}
    assert v.next_id == 3


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('2. browse("a")', "unknown tool 'browse'"),
        ('2. math("${3}")', "forward reference"),
        ("2. scale($2)", "cycle"),
        ('1. search("again")', "duplicate step id 1"),
        ("2. search(5)", "expected string, got integer"),
        ('2. scale("ten")', "expected number, got string"),
        ('2. scale(value="${1}")', "expected number, got string"),
        ("2. scale()", "missing required"),
        ('2. search(q="a")', "has no argument 'q'"),
        ('2. search("a", "b")', "takes 1 argument"),
        ('2. search("a", query="b")', "given twice"),
    ],
)
def test_validation_errors(line: str, message: str) -> None:
    v = PlanValidator(TOOLS)
    _check(v, '1. search("seed")')
    step, issues = _check(v, line)
    assert step is None
    assert len(issues) == 1 and issues[0].kind == "validation"
    assert message in issues[0].message


def test_dangling_and_rejected_references_explain_themselves() -> None:
    v = PlanValidator(TOOLS)
    _check(v, '2. search("a")')
    step, issues = _check(v, "3. scale($1)")
    assert step is None and "dangling reference" in issues[0].message
    bad = parse_line('4. search("oops)')
    v.reject_syntax(bad)
    step, issues = _check(v, "5. scale($4)")
    assert step is None and "step 4, which was rejected" in issues[0].message


def test_literal_dollar_that_looks_like_a_step_reference_warns() -> None:
    v = PlanValidator(TOOLS)
    _check(v, '1. search("a")')
    step, issues = _check(v, '2. math("$1 - 3")')
    assert step is not None and step.args == {"expression": "$1 - 3"}  # still literal
    assert issues and issues[0].kind == "warning" and "${1}" in issues[0].message
    step, issues = _check(v, '3. search("price $10")')  # no step 10: no noise
    assert step is not None and not issues


def test_rendered_steps_parse_back_to_the_same_arguments() -> None:
    v = PlanValidator(TOOLS)
    _check(v, '1. search("a")')
    step, _ = _check(v, '2. math("${1.x[0]} costs $10, literal $${ here \\"q\\"")')
    again = parse_line(step.render())
    assert isinstance(again, ParsedCall)
    assert dict(again.keywords) == step.args


@pytest.mark.parametrize(
    ("reply", "action", "text"),
    [
        ("Thought: ok\nAction: Finish(Blade Runner (1982))", "finish", "Blade Runner (1982)"),
        ('Thought: ok\nAction: Finish("quoted")\nThanks!', "finish", "quoted"),
        ("Thought: missing\nAction: Replan(search for Michelle)", "replan", "search for Michelle"),
        ("just an answer", "finish", "just an answer"),
    ],
)
def test_parse_join(reply: str, action: str, text: str) -> None:
    from appl.compiler import parse_join

    decision = parse_join(reply)
    assert (decision.action, decision.text) == (action, text)
    assert bool(decision.note) == ("Action" not in reply)
