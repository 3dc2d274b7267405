"""Plain-text helpers shared by every layer: Hydra-quoted override values and padded tables."""

from __future__ import annotations

from collections.abc import Sequence


def quoted(value: str) -> str:
    """``value`` as a quoted Hydra override value (paths and URIs may hold any character)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to their widest cell; the last column is not padded."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths)) + "  " + row[-1] for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(line.rstrip() for line in lines)
