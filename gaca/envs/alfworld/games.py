"""Where games come from: ALFWorld's official game files, or generated ones cached on disk.

Official layout (what ``alfworld-download`` writes under ``$ALFWORLD_DATA``):
``json_2.1.1/<split>/<task folder>/<trial folder>/{traj_data.json, game.tw-pddl}``, splits train,
valid_seen and valid_unseen. Generated games are single ``.tw-pddl`` files named by a hash of their
content, so a cache folder can be shared by every run and process.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from gaca.envs.alfworld.lexicon import ALFRED_TASK_TYPE
from gaca.envs.alfworld.problem import game_content
from gaca.envs.household.world import HouseholdTask

OFFICIAL_ROOT = "json_2.1.1"
GAME_FILE = "game.tw-pddl"
TRAJECTORY_FILE = "traj_data.json"
TRAIN_SPLIT = "train"


def official_games(games_dir: Path, split: str, task_types: Iterable[str]) -> list[Path]:
    """The playable game files of ``split``, sorted, chosen as ALFWorld's own loader does.

    Skipped like in ``AlfredTWEnv.collect_game_files``: movable-receptacle and sliced trials, other task
    types, trials without a game file, and games whose file does not say ``"solvable": true``.
    """
    wanted = {ALFRED_TASK_TYPE[t] for t in task_types}
    root = games_dir / OFFICIAL_ROOT / split
    games = []
    for trajectory in sorted(root.rglob(TRAJECTORY_FILE)):
        folder = trajectory.parent
        relative = str(folder.relative_to(root))
        game = folder / GAME_FILE
        if "movable" in relative or "Sliced" in relative or not game.is_file():
            continue
        if json.loads(trajectory.read_text())["task_type"] not in wanted:
            continue
        if json.loads(game.read_text()).get("solvable"):
            games.append(game)
    return games


def missing_official_games(games_dir: Path, splits: Iterable[str]) -> str | None:
    """Why ``games_dir`` is not a folder of official games (None when each split holds a game file)."""
    if not games_dir.is_dir():
        return "is not a folder"
    for split in splits:
        root = games_dir / OFFICIAL_ROOT / split
        if next(root.rglob(GAME_FILE), None) is None:
            return f"has no {OFFICIAL_ROOT}/{split}/**/{GAME_FILE}"
    return None


class GameCache:
    """Generated games in ``folder``: one file per task, named by a hash of its content.

    A missing game is generated on first use: its content (``problem.game_content``) plus the
    walkthrough of ALFWorld's planner from the initial state, which ``plan`` returns (an empty plan
    means the game cannot be won, an error). Files are written to a temporary name and renamed, so
    concurrent runs never read a partial file.
    """

    def __init__(self, folder: Path, plan: Callable[[dict[str, str]], list[str]]) -> None:
        self.folder = folder
        self._plan = plan
        self._paths: dict[HouseholdTask, Path] = {}

    def game_file(self, task: HouseholdTask) -> Path:
        path = self._paths.get(task)
        if path is None:
            content = game_content(task)
            digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:20]
            path = self.folder / f"{task.task_type}-{digest}.tw-pddl"
            if not path.is_file():
                walkthrough = self._plan(content)
                if not walkthrough:
                    raise RuntimeError(f"ALFWorld's planner finds no plan for the generated task {task!r}")
                _write_atomically(path, {**content, "solvable": True, "walkthrough": walkthrough})
            self._paths[task] = path
        return path


def _write_atomically(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as file:
            json.dump(data, file)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
