"""gen(n=k): k futures from one call; one request where the server honours `n`, emulated
where it does not (capability n=false, or a server that silently answers one choice, as the
llama.cpp server does); recorded and replayed as one call."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pydantic
import pytest

from appl import GenFuture, StructuredOutputError, gen, ppl
from appl.testing import Rule
from appl.trace import read_trace, recording, replaying

ANSWERS = ["42", "41", "42"]


@ppl
async def vote(k: int) -> tuple[str, list[GenFuture]]:
    """Self-consistency with one call for k samples."""
    "vote: 6*7?"
    samples = gen(n=k, temperature=1.0)
    for sample in samples:
        await sample
    return str(Counter(samples).most_common(1)[0][0]), samples


async def test_one_request_when_the_server_supports_n(scripted) -> None:
    server = scripted([Rule(match="vote", replies=ANSWERS)])
    best, samples = await vote(3)
    assert best == "42" and sorted(map(str, samples)) == sorted(ANSWERS)
    assert len(server.requests) == 1 and server.requests[0]["n"] == 3
    assert all(s.done() for s in samples)


async def test_a_server_answering_fewer_choices_is_detected_and_emulated(scripted) -> None:
    server = scripted([Rule(match="vote", replies=ANSWERS * 3)], max_choices=1)
    best, samples = await vote(3)
    assert len(samples) == 3 and best in ANSWERS
    # one request asked for n=3 and got one choice; the two missing were asked one by one
    assert [r.get("n", 1) for r in server.requests] == [3, 1, 1]
    await vote(2)  # this model is now known to ignore n: emulated from the start
    assert [r.get("n", 1) for r in server.requests[3:]] == [1, 1]


async def test_capability_n_false_sends_k_requests(scripted) -> None:
    server = scripted([Rule(match="vote", replies=ANSWERS)], model={"capabilities": {"n": False}})
    best, _ = await vote(3)
    assert best == "42" and len(server.requests) == 3
    assert all("n" not in r for r in server.requests)


async def test_gen_n_is_recorded_and_replayed(scripted, tmp_path: Path) -> None:
    server = scripted([Rule(match="vote", replies=ANSWERS)])
    trace = tmp_path / "n.jsonl"
    with recording(trace):
        best, samples = await vote(3)
    texts = [str(s) for s in samples]
    responses = [r for r in read_trace(trace).records if r["type"] == "gen_response"]
    assert len(responses) == 1 and [c["text"] for c in responses[0]["data"]["choices"]] == texts
    served = len(server.requests)
    with replaying(trace) as replayer:
        again_best, again = await vote(3)
    assert (again_best, [str(s) for s in again]) == (best, texts)
    assert len(server.requests) == served and replayer.index.hits == 1


class Guess(pydantic.BaseModel):
    value: int


async def test_structured_choices_are_validated_one_by_one(scripted) -> None:
    scripted([Rule(match="guess", replies=['{"value": 1}', "not json", '{"value": 3}'])])

    @ppl
    async def guesses() -> tuple[list[int], list[str]]:
        """Three structured samples, read inside the run (an unread error fails the run)."""
        "guess"
        values, raw = [], []
        for sample in gen(n=3, response_format=Guess):
            try:
                values.append((await sample).value)
            except StructuredOutputError as exc:
                raw.append(exc.raw_text)
        return values, raw

    values, raw = await guesses()
    assert sorted(values) == [1, 3] and raw == ["not json"]


async def test_gen_n_refuses_tools_and_stream(scripted) -> None:
    scripted()

    @ppl
    async def bad(kind: str) -> None:
        """Invalid combinations."""
        "x"
        if kind == "stream":
            gen(n=2, stream=True)
        else:
            gen(n=0)

    with pytest.raises(ValueError, match="tools or stream"):
        await bad("stream")
    with pytest.raises(ValueError, match="n must be at least 1"):
        await bad("zero")
