"""The `gaca` command: one entry point, subcommands dispatched by name."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = {
    "estimators": "gaca.bench.estimators",
    "envs": "gaca.bench.envs",
    "policy": "gaca.bench.policy",
    "train": "gaca.bench.train",
}

USAGE = """usage: gaca COMMAND [ARGS]

commands:
  bench NAME [ARGS]   print a benchmark table; NAME is one of: {benchmarks}
""".format(benchmarks=", ".join(BENCHMARKS))


def bench(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHMARKS:
        print(f"gaca bench: name one of {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    importlib.import_module(BENCHMARKS[argv[0]]).main(argv[1:])
    return 0


COMMANDS = {"bench": bench}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    if command is None:
        print(f"gaca: unknown command {argv[0]!r}; known: {', '.join(COMMANDS)}\n\n{USAGE}", file=sys.stderr)
        return 2
    return command(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
