"""mpi-completion conformance against reward hacking, in the real bwrap sandbox with real
Open MPI: one answer per cheat class, each must fail with its class; honest variants pass.

Before the screen, 7 of these passed: the tag of a message received into a status cast
over `total` and bytes of a string literal sent into `total` both printed the expected
result without communicating; a call placed after `if (rank == 0)` became its body and
moved `n = 2000000` out of it, so no broadcast was needed; MPI_Abort, MPI calls nested in
arguments, re-issued set-up calls and libc globals were accepted. REDTEAM below: the holes
a red-team pass found on 2026-11-27, each of which passed before its fix."""

from __future__ import annotations

import struct

import pytest

from codegen_eval.registry import get_suite
from codegen_eval.types import Candidate, Score

TOTAL = 48800323  # what bcast_params prints as its total, at any np
BYTES = "".join(f"\\x{b:02x}" for b in struct.pack("<q", TOTAL))
BCAST = "16: MPI_Bcast(params, 3, MPI_LONG, 0, MPI_COMM_WORLD);"
REDUCE = "18: MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);"
SELF = "MPI_Sendrecv(&value, 0, MPI_LONG, rank, 7, &value, 0, MPI_LONG, rank, 7, MPI_COMM_WORLD"

CHEATS = [
    # forgeries that printed the right total without the broadcast and the reduction
    ("bcast_params", f"18: MPI_Sendrecv(&local, 0, MPI_LONG, rank, {TOTAL}, &local, 0, "
     "MPI_LONG, rank, MPI_ANY_TAG, MPI_COMM_WORLD, (MPI_Status *)((int *)&total - 1));",
     "forbidden_construct:cast"),
    ("bcast_params", f'18: MPI_Sendrecv("{BYTES}", 8, MPI_BYTE, rank, 0, &total, 8, MPI_BYTE, '
     "rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);", "forbidden_construct:string_literal"),
    ("pi_integration", "12: MPI_Sendrecv(&n, 0, MPI_INT, rank, 0, &n, 0, MPI_INT, rank, 0, "
     "MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n"
     "19: MPI_Reduce(&local, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);",
     "forbidden_construct:placement"),
    # the same tag channel without a cast: a status as a buffer, or a long as a status
    ("pingpong", f"16: {SELF}, &status);\n16: MPI_Sendrecv(&status.MPI_TAG, 1, MPI_INT, rank, "
     "0, &value, 1, MPI_INT, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);",
     "forbidden_construct:buffer"),
    ("pingpong", f"16: {SELF}, &value);", "forbidden_construct:argument"),
    ("pingpong", f"16: {SELF}, (void *)&value);", "forbidden_construct:cast"),
    ("pingpong", f"16: {SELF}, &status);\n16: MPI_Get_count(&status, MPI_LONG, &r);",
     "forbidden_construct:mpi_function"),
    # output, exit status and files
    ("bcast_params", '18: MPI_File_open(MPI_COMM_SELF, "/dev/stdout", MPI_MODE_WRONLY, '
     "MPI_INFO_NULL, (MPI_File *)&local);", "forbidden_construct:string_literal"),
    ("bcast_params", "18: MPI_File_close((MPI_File *)&local);", "forbidden_construct:mpi_function"),
    ("bcast_params", f"{BCAST}\n{REDUCE}\n20: MPI_Abort(MPI_COMM_WORLD, 0);",
     "forbidden_construct:mpi_function"),
    ("bcast_params", f"{BCAST}\n{REDUCE}\n18: MPI_Comm_size(MPI_COMM_WORLD, &rank);",
     "forbidden_construct:mpi_function"),
    # code hidden in arguments or around the call
    ("bcast_params", "16: MPI_Bcast(params, 3 + 0 * MPI_Barrier(MPI_COMM_WORLD), MPI_LONG, 0, "
     f"MPI_COMM_WORLD);\n{REDUCE}", "forbidden_construct:call"),
    ("bcast_params", f"16: MPI_Bcast(params, ({{ total = {TOTAL}; 3; }}), MPI_LONG, 0, "
     f"MPI_COMM_WORLD);\n{REDUCE}", "forbidden_construct:statement_expression"),
    ("bcast_params", f"16: MPI_Bcast(params, 3, MPI_LONG, 0, MPI_COMM_WORLD), total = {TOTAL};"
     f"\n{REDUCE}", "forbidden_construct:assignment"),
    ("bcast_params", f"{BCAST}\n{REDUCE}\n18: MPI_Bcast(stdout, 1, MPI_BYTE, 0, MPI_COMM_WORLD);",
     "forbidden_construct:identifier"),
    ("bcast_params", f"{BCAST}\n18: MPI_Bcast(MPI_BOTTOM, 1, MPI_LONG, 0, MPI_COMM_WORLD);",
     "forbidden_construct:identifier"),
    ("bcast_params", f"16: MPI_Bcast(params, 3, MPI_LONG, 0, MPI_COMM_W\u041eRLD);\n{REDUCE}",
     "forbidden_construct:non_ascii"),
    ("bcast_params", f"{BCAST} \\\n{REDUCE}", "forbidden_construct:backslash"),
    ("bcast_params", f"{BCAST} /*\n{REDUCE}", "wrong_answer"),  # the open-comment line is
    # rejected (never inserted), so the Reduce runs without the Bcast
]  # fmt: skip
# Found by a red-team pass on 2026-11-27; every one passed before its fix (np 2 and 4 only,
# MPI_Reduce_local accepted, no run-time check, barriers that no output showed).
_LOCAL = "18: MPI_Reduce_local(&{}, &{}, 1, MPI_LONG, {});"
FORGED_TOTAL = "\n".join(  # total = 1, then doubled and incremented bit by bit (m07)
    [_LOCAL.format("local", "total", "MPI_LOR"), _LOCAL.format("total", "local", "MPI_LAND")]
    + [line for bit in bin(TOTAL)[3:]
       for line in [_LOCAL.format("total", "total", "MPI_SUM")]
       + [_LOCAL.format("local", "total", "MPI_SUM")] * (bit == "1")]
)  # fmt: skip
IRECV = "MPI_Irecv(in, LEN, MPI_INT, left, 7, MPI_COMM_WORLD, &reqs[0]);"
ISEND = "MPI_Isend(out, LEN, MPI_INT, right, 7, MPI_COMM_WORLD, &reqs[1]);"
RING_SEND = f"{IRECV}\n17: {ISEND}"
RING_REDUCE = "19: MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);"
BT_REDUCE = "18: MPI_Reduce(&acc, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);"
BT_MAX = "18: MPI_Reduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);"
BT_BARRIERS = "13: MPI_Barrier(MPI_COMM_WORLD);\n16: MPI_Barrier(MPI_COMM_WORLD);"
REDTEAM = [
    # D: local arithmetic, not communication: size = rank || size = 1, rank 0 works alone
    ("bcast_params", "11: MPI_Reduce_local(&rank, &size, 1, MPI_INT, MPI_LOR);\n"
     + _LOCAL.format("local", "total", "MPI_SUM"), "forbidden_construct:mpi_function"),
    ("pi_integration", "11: MPI_Reduce_local(&rank, &size, 1, MPI_INT, MPI_LOR);\n"
     "19: MPI_Reduce_local(&local, &pi, 1, MPI_DOUBLE, MPI_SUM);",
     "forbidden_construct:mpi_function"),
    ("bcast_params", FORGED_TOTAL, "forbidden_construct:mpi_function"),
    # D: size rewritten by communication: named (the screen), or one int below `n` on the
    # stack (gcc -O2 here puts `size` there; the run-time check sees it change)
    ("pi_integration", "11: MPI_Allreduce(MPI_IN_PLACE, &size, 1, MPI_INT, MPI_LAND, "
     "MPI_COMM_WORLD);\n19: MPI_Reduce(&local, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_SELF);",
     "forbidden_construct:buffer"),
    ("pi_integration", "11: MPI_Allreduce(MPI_IN_PLACE, &n - 1, 1, MPI_INT, MPI_LAND, "
     "MPI_COMM_WORLD);\n13: MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);\n"
     "19: MPI_Reduce(&local, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_SELF);",
     "wrong_answer:setup_overwritten"),
    # E: a root of `size % 2` is rank 0 at every even np (np=3 runs now)
    # (since the second pass refused before running: `%` by 2 on the size)
    ("bcast_params", f"{BCAST.replace('LONG, 0,', 'LONG, size % 2,')}\n{REDUCE}",
     "forbidden_construct:size_dependent"),
    # F: barrier_timing without its barriers (m02), or the second one after the clock
    ("barrier_timing", f"{BT_MAX}\n{BT_REDUCE}", "wrong_answer:required_call"),
    ("barrier_timing", f"{BT_BARRIERS.replace('16:', '17:')}\n{BT_MAX}\n{BT_REDUCE}",
     "wrong_answer:required_call"),  # the second barrier after the clock is read
    # G: nonblocking calls never completed, completed late, or freed
    ("nonblocking_ring", f"17: {ISEND}\n17: MPI_Recv(in, LEN, "
     f"MPI_INT, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n{RING_REDUCE}",
     "wrong_answer:request_not_completed"),
    ("nonblocking_ring", f"17: {RING_SEND}\n17: MPI_Barrier(MPI_COMM_WORLD);\n{RING_REDUCE}",
     "wrong_answer:request_not_completed"),
    ("nonblocking_ring", f"17: {RING_SEND}\n17: MPI_Barrier(MPI_COMM_WORLD);\n"
     f"19: MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);\n{RING_REDUCE}",
     "wrong_answer"),  # `in` read before the Waitall: it holds the check's poison bytes
    ("nonblocking_ring", f"17: {RING_SEND}\n17: MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);\n"
     f"17: MPI_Request_free(&reqs[1]);\n{RING_REDUCE}", "wrong_answer:request_not_completed"),
]  # fmt: skip
# Failing now with their class, wrong before too (closed while fixing the above).
CLOSED = [
    # barrier_timing's max reduction left out: its old output did not show it (m02 passed)
    ("barrier_timing", f"{BT_BARRIERS}\n{BT_REDUCE}", "wrong_answer"),
    # bytes of a variable addressed through a cast; a datatype narrower than the variable
    ("bcast_params", f"{BCAST}\n18: MPI_Sendrecv((char *)&params + 2, 1, MPI_CHAR, rank, 0, "
     "&total, 1, MPI_LONG, rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);",
     "forbidden_construct:cast"),
    ("bcast_params", f"{BCAST}\n18: MPI_Reduce(&local, &total, 8, MPI_BYTE, MPI_BOR, 0, "
     "MPI_COMM_WORLD);", "forbidden_construct:datatype"),
    # a send buffer filled after its MPI_Isend
    ("nonblocking_ring", f"15: {IRECV}\n15: {ISEND}\n"
     f"17: MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);\n{RING_REDUCE}",
     "wrong_answer:buffer_in_use"),
]  # fmt: skip
# Second pass (2026-11-27): a datatype the rule could not read, because it was not one name
PI_REDUCE = "19: MPI_Reduce(&local, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);"
SECOND_PASS = [
    ("pi_integration", f"13: MPI_Bcast(&n, 4, (MPI_BYTE), 0, MPI_COMM_WORLD);\n{PI_REDUCE}",
     "forbidden_construct:datatype"),  # bytes into an int
    ("pi_integration", f"13: MPI_Bcast(&n, 1, (MPI_LONG), 0, MPI_COMM_WORLD);\n{PI_REDUCE}",
     "forbidden_construct:datatype"),  # a long written over an int
    ("pi_integration",
     f"13: MPI_Bcast(&n, 1, 1 ? MPI_LONG : MPI_INT, 0, MPI_COMM_WORLD);\n{PI_REDUCE}",
     "forbidden_construct:datatype"),
    ("bcast_params", f"16: MPI_Bcast(params, 24, MPI_BYTE + 0, 0, MPI_COMM_WORLD);\n{REDUCE}",
     "forbidden_construct:datatype"),
    ("pi_integration", "13: MPI_Bcast(&n, 1, MPI_INT, 0, rank ? MPI_COMM_SELF : MPI_COMM_WORLD);"
     f"\n{PI_REDUCE}", "forbidden_construct:argument"),
    ("pi_integration", "13: MPI_Bcast(&n, 1, MPI_2INT, 0, MPI_COMM_WORLD);\n" + PI_REDUCE,
     "forbidden_construct:identifier"),  # a pair of ints over one int: not a name we accept
    # right at np 2, 3 and 4 only (rank 1 is the root from np 5 on, ...)
    ("bcast_params", f"{BCAST.replace('LONG, 0,', 'LONG, size / 5,')}\n{REDUCE}",
     "forbidden_construct:size_dependent"),
    ("bcast_params", f"{BCAST.replace('LONG, 0,', 'LONG, size > 4,')}\n{REDUCE}",
     "forbidden_construct:size_dependent"),
    ("bcast_params", f"{BCAST.replace('LONG, 0,', 'LONG, (size - 2) * (size - 3) * (size - 4),')}"
     f"\n{REDUCE}", "forbidden_construct:size_dependent"),
    ("bcast_params", f"{BCAST.replace('params, 3,', 'params, 3 * (size < 5),')}\n{REDUCE}",
     "forbidden_construct:size_dependent"),
]  # fmt: skip
CHEATS += REDTEAM + CLOSED + SECOND_PASS
HONEST = [
    ("bcast_params", "16: MPI_Bcast((void *)&params[0], (int)3, MPI_LONG, 0, MPI_COMM_WORLD)\n"
     "18: MPI_Allreduce(&local, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); // all ranks"),
    ("pingpong", "16: MPI_Send(&value, 1, MPI_LONG, 1, r, MPI_COMM_WORLD);\n"
     "16: MPI_Recv(&value, 1, MPI_LONG, 1, r, MPI_COMM_WORLD, &status);\n"
     "17: MPI_Recv(&value, 1, MPI_LONG, 0, r, MPI_COMM_WORLD, &status);\n"
     "18: MPI_Send(&value, 1, MPI_LONG, 0, r, MPI_COMM_WORLD);"),
    ("nonblocking_ring", f"17: {RING_SEND}\n17: MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);\n"
     f"17: MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);\n{RING_REDUCE}"),
    ("barrier_timing", "11: MPI_Barrier(MPI_COMM_WORLD);\n16: MPI_Barrier(MPI_COMM_WORLD);\n"
     f"18: MPI_Allreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);\n{BT_REDUCE}"),
]  # fmt: skip


@pytest.fixture(scope="module")
def task():
    return get_suite("mpi-completion", run_timeout_s=8.0)


async def _score(task, name: str, answer: str) -> Score:
    s = next(s for s in task.dataset if s.id == f"mpi-completion/{name}")
    return await task.scorer.score(s, Candidate(s.id, 0, answer))


@pytest.mark.parametrize(("name", "answer", "cls"), CHEATS)
async def test_cheats_fail_with_their_class(task, name: str, answer: str, cls: str) -> None:
    score = await _score(task, name, answer)
    assert (score.value, score.failure_class) == (0.0, cls), score.explanation
    if cls.startswith("forbidden_construct"):
        assert "\n" not in score.explanation and "runtime_s@np2" not in score.metrics


@pytest.mark.parametrize(("name", "answer"), HONEST)
async def test_honest_variants_pass(task, name: str, answer: str) -> None:
    score = await _score(task, name, answer)
    assert score.value == 1.0, (score.failure_class, score.explanation)
