"""Where the first gen of a process spends its time, against later ones.

Each sample is a fresh interpreter that imports appl, then makes three top-level sync @ppl
runs of one gen each against a ScriptedServer in THIS process (0 ms latency), and reports
the parts of the first call measured in-process: importing the provider (what the first
`get_model` imports), building the HTTP client, and the first request on a new connection,
then the wall time of run 1, 2 and 3. Medians over the samples; the machine is noisy, so
compare checkouts side by side in one sitting (run it with each checkout's PYTHONPATH).

    PYTHONPATH=. .venv/bin/python benchmarks/first_call.py [--samples 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from appl.testing import Rule, ScriptedServer

CHILD = textwrap.dedent(
    """
    import json, sys, time
    t0 = time.perf_counter()
    import appl
    from appl import configure, gen, ppl
    t_import = time.perf_counter() - t0
    configure(models={"m": {"provider": "openai", "api_key": "k", "api_key_env": None,
                            "base_url": sys.argv[1]}}, default_model="m")

    @ppl
    def ask(q):
        q
        return str(gen())

    runs = []
    for i in range(3):
        started = time.perf_counter()
        ask(f"hi {i}")
        runs.append(time.perf_counter() - started)
    print(json.dumps({"import_appl": t_import, "runs": runs,
                      "openai_imported": "openai" in sys.modules}))
    """
)

PARTS = textwrap.dedent(
    """
    import asyncio, json, sys, time
    import appl
    from appl import configure
    from appl.types import GenRequest, Message
    configure(models={"m": {"provider": "openai", "api_key": "k", "api_key_env": None,
                            "base_url": sys.argv[1]}}, default_model="m")

    async def main():
        t0 = time.perf_counter()
        from appl.models import get_model, close_models
        model = get_model("m")
        t1 = time.perf_counter()
        inner = model.inner
        if hasattr(inner, "_get_direct") and inner._use_direct:
            await inner._get_direct()
        else:
            await inner._get_client()
        t2 = time.perf_counter()
        request = GenRequest(model="m", messages=[Message("user", "hi")])
        await model.generate(request)
        t3 = time.perf_counter()
        await model.generate(request)
        t4 = time.perf_counter()
        await close_models()
        return {"provider_import": t1 - t0, "client": t2 - t1, "first_request": t3 - t2,
                "second_request": t4 - t3}

    print(json.dumps(asyncio.run(main())))
    """
)


def _child(code: Path, base_url: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, str(code), base_url],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", ".")},
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=7)
    args = parser.parse_args()
    import appl

    print(f"appl from {Path(appl.__file__).parent}, load {os.getloadavg()[0]:.1f}")
    with ScriptedServer([Rule(reply="ok")]) as server, tempfile.TemporaryDirectory() as tmp:
        child, parts = Path(tmp, "child.py"), Path(tmp, "parts.py")
        child.write_text(CHILD)
        parts.write_text(PARTS)
        runs = [_child(child, server.base_url) for _ in range(args.samples)]
        steps = [_child(parts, server.base_url) for _ in range(args.samples)]

    def med(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:7.0f} ms (spread {(max(values) - min(values)) * 1000:.0f})"

    print(f"medians of {args.samples} fresh interpreters:")
    print(f"  import appl             {med([r['import_appl'] for r in runs])}")
    for i in range(3):
        print(f"  sync run {i + 1} (one gen)    {med([r['runs'][i] for r in runs])}")
    extra = [r["runs"][0] - r["runs"][2] for r in runs]
    print(f"  first-call extra (run 1 - run 3) {med(extra)}")
    print("  parts of the first call:")
    for key in ("provider_import", "client", "first_request", "second_request"):
        print(f"    {key:20} {med([s[key] for s in steps])}")
    print(f"  openai imported by plain gens: {any(r['openai_imported'] for r in runs)}")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
