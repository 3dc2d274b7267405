"""Every Markdown file that the project's code and docs name exists in the repository.

A user's clone has only the repository: a reference to a design note that lives elsewhere is a dead
end. Names of the report's own outputs (``claims.md``, ``horizon.md``), which ``gaca report`` writes,
are the one exception, and they must be written by the code that names them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARKDOWN_NAME = re.compile(r"(?<![\w./-])((?:\.\./|\./)?[\w./-]*[\w-]\.md)\b")
GENERATED = ("claims.md", "horizon.md")
"""Files ``gaca report`` writes under its output folder (``analysis/report.py``, ``analysis/render/horizon.py``)."""


def project_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / name for name in listed if name.endswith((".py", ".md", ".yaml", ".yml", ".sh", ".toml", ".cfg"))]


def named_markdown(path: Path) -> set[str]:
    return set(MARKDOWN_NAME.findall(path.read_text(errors="replace")))


def resolves(name: str, source: Path) -> bool:
    if Path(name).name in GENERATED:
        return True
    candidates = [source.parent / name, ROOT / name, ROOT / "docs" / name]
    return any(candidate.resolve().is_file() and ROOT in candidate.resolve().parents for candidate in candidates)


def test_every_markdown_file_named_exists() -> None:
    dead = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in project_files()
        if path != Path(__file__).resolve()
        for name in named_markdown(path)
        if not resolves(name, path)
    )
    assert not dead, "Markdown files named but not in the repository:\n" + "\n".join(dead)


def test_the_generated_names_are_written_by_the_report() -> None:
    writers = (ROOT / "analysis" / "report.py").read_text() + (ROOT / "analysis" / "render" / "horizon.py").read_text()
    for name in GENERATED:
        assert f'"{name}"' in writers, f"{name} is listed as generated but no report module writes it"


OUTSIDE = tuple(
    "".join(parts) for parts in (("ESTIMATOR-", "SPEC"), ("FACTS", ".md"), ("STYLE", ".md"), ("..", "/shared"))
)
"""Notes kept beside the repository, never in it (spelled in pieces so that this file does not name them)."""


@pytest.mark.parametrize("name", OUTSIDE)
def test_no_reference_to_files_outside_the_repository(name: str) -> None:
    hits = [str(path.relative_to(ROOT)) for path in project_files() if name in path.read_text(errors="replace")]
    assert not hits, f"{name} is named in {hits}"


def test_a_dead_reference_is_caught(tmp_path: Path) -> None:
    note = tmp_path / "note.py"
    note.write_text('"""See docs/no-such-note.md and docs/estimator.md."""\n')
    names = named_markdown(note)
    assert names == {"docs/no-such-note.md", "docs/estimator.md"}
    assert not resolves("docs/no-such-note.md", note)
    assert resolves("docs/estimator.md", note)
