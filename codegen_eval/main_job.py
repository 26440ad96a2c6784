"""The README's main job. Until the benchmark run lands, a demo prompt program."""

from __future__ import annotations

import sys


def main() -> int:
    print("codegen-lab: the main job is not wired up yet", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
