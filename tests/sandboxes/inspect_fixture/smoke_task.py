"""A tiny Inspect task for the smoke test of the sandbox `bwrap`
(tests/sandboxes/test_inspect_sandbox.py::test_inspect_eval_runs_a_task_in_bwrap).

The task names the sandbox only by its string "bwrap": Inspect finds it through our
`inspect_ai` entry point, not through an import here. The solver compiles and runs a C
program in the sandbox; the scorer reads the file the program wrote and checks it there.
It calls no model: mockllm's generate counts tokens with tiktoken's o200k_base, which it
downloads, and this machine has no network.
"""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import sandbox

PROGRAM = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
    FILE *f = fopen("out/answer.txt", "w");
    if (!f) return 3;
    fprintf(f, "%d uid=%d\n", 6 * 7, (int)getuid());
    return fclose(f);
}
"""


@solver
def compile_and_run():  # type: ignore[no-untyped-def]
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sb = sandbox()
        await sb.write_file("src/main.c", PROGRAM)
        built = await sb.exec(["gcc", "-O2", "-o", "/tmp/main", "src/main.c"], timeout=120)
        state.metadata["build_rc"] = built.returncode
        await sb.exec(["mkdir", "-p", "out"])
        ran = await sb.exec(["/tmp/main"], timeout=30)
        state.metadata["run_rc"] = ran.returncode
        limits = await sb.exec(["grep", "Max file size", "/proc/self/limits"])
        state.metadata["file_size_limit"] = limits.stdout.split()[3]  # from bwrap.yaml
        return state

    return solve


@scorer(metrics=[accuracy()])
def answer_file():  # type: ignore[no-untyped-def]
    async def score(state: TaskState, target: Target) -> Score:
        try:
            text = await sandbox().read_file("out/answer.txt")
        except FileNotFoundError:
            return Score(value="I", explanation="no answer file")
        value, _, uid = text.strip().partition(" ")
        ok = value == target.text and uid != "uid=0"
        return Score(value="C" if ok else "I", answer=text.strip())

    return score


@task
def smoke() -> Task:
    return Task(
        dataset=[Sample(input="What is 6 * 7?", target="42"), Sample(input="6*7?", target="42")],
        solver=compile_and_run(),
        scorer=answer_file(),
        sandbox="bwrap",
    )
