"""The alfworld family: real ALFWorld games on the TextWorld engine, registered as "alfworld"."""

from __future__ import annotations

import functools
import importlib.util
import os
import random
import re
from pathlib import Path
from typing import TYPE_CHECKING

from gaca.envs.alfworld.engine import AlfworldEnv, EnginePool, normalise
from gaca.envs.alfworld.games import TRAIN_SPLIT, GameCache, missing_official_games, official_games
from gaca.envs.alfworld.knobs import PRESETS, AlfworldKnobs
from gaca.envs.alfworld.lexicon import ALFRED_TASK_TYPE, alfred_class, constants, import_alfworld, is_playable
from gaca.envs.alfworld.problem import domain_and_grammar
from gaca.envs.base import MAX_REDRAWS, EnvFamily
from gaca.envs.families import FAMILIES
from gaca.envs.household.lexicon import LAMP_TYPES, OBJECT_TYPES, RECEPTACLE_TYPES
from gaca.envs.household.world import HouseholdTask, generate_task
from gaca.envs.text import words

if TYPE_CHECKING:
    from gaca.envs.config import EnvConfig

REQUIRED_PACKAGES = ("alfworld", "textworld", "fast_downward")
INSTALL_HINT = "pip install 'gaca[alfworld]' (builds fast-downward from source: needs cmake, make and g++)"
MAX_INSTANCE_NUMBER = 99
"""Official rooms number at most a few dozen instances of a class ("cabinet 27")."""
_GRAMMAR_TEXT = re.compile(r'"rhs":\s*"((?:[^"\\]|\\.)*)"|template :: "([^"]*)"')
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|#[^#]*#|\\n|[{}\[\]]")


def default_cache_dir() -> Path:
    """Where generated games go when ``EnvConfig.cache_dir`` is unset: $XDG_CACHE_HOME/gaca/alfworld."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gaca" / "alfworld"


@FAMILIES.register("alfworld")
class AlfworldFamily(EnvFamily[HouseholdTask | Path, AlfworldEnv]):
    """ALFWorld's six task types played by ALFWorld's own engine; horizon 50 by default.

    With ``cfg.games_dir`` the tasks are the official games: evaluation task i is the i-th game of
    ``knobs.eval_split`` (sorted), training tasks are the train split's games in an order drawn from
    ``cfg.seed``. Without it, tasks are household tasks that ALFWorld's rules allow (redrawn
    otherwise), written as PDDL problems for ALFWorld's domain and cached under ``cfg.cache_dir``.
    """

    default_horizon = 50
    knob_presets = PRESETS
    knobs: AlfworldKnobs

    @classmethod
    def check_config(cls, cfg: EnvConfig) -> None:
        cls.resolve_knobs(cfg.difficulty, cfg.knobs)
        missing = [name for name in REQUIRED_PACKAGES if importlib.util.find_spec(name) is None]
        if missing:
            raise ValueError(f"env.name=alfworld needs the packages {missing}: {INSTALL_HINT}")
        if cfg.games_dir is not None:
            splits = (TRAIN_SPLIT, cls.resolve_knobs(cfg.difficulty, cfg.knobs).eval_split)
            why = missing_official_games(Path(cfg.games_dir).expanduser(), splits)
            if why is not None:
                raise ValueError(
                    f"env.games_dir={cfg.games_dir!r} (conf/env/alfworld.yaml reads $ALFWORLD_DATA) {why}: "
                    "point it at the folder alfworld-download fills, or unset it to play generated games"
                )

    def __init__(self, cfg: EnvConfig) -> None:
        super().__init__(cfg)
        self.engines = EnginePool()
        self.games_dir = Path(cfg.games_dir).expanduser() if cfg.games_dir is not None else None
        cache_dir = Path(cfg.cache_dir).expanduser() if cfg.cache_dir else default_cache_dir()
        self.games = GameCache(cache_dir, self.engines.walkthrough)
        if self.games_dir is not None and len(self._eval_games) < cfg.num_eval_tasks:
            raise ValueError(
                f"env.num_eval_tasks={cfg.num_eval_tasks} exceeds the {len(self._eval_games)} playable games "
                f"of {self.games_dir}/json_2.1.1/{self.knobs.eval_split} for task types "
                f"{list(self.knobs.task_types)}; lower it"
            )

    def task(self, task_id: int) -> HouseholdTask | Path:
        """A household task (generated games) or the game file of ``task_id`` (official games)."""
        if self.games_dir is None:
            return super().task(task_id)
        if task_id in self.eval_task_ids:
            return self._eval_games[task_id]
        return self._train_games[(task_id - self.cfg.num_eval_tasks) % len(self._train_games)]

    def _generate(self, rng: random.Random) -> HouseholdTask:
        for _ in range(MAX_REDRAWS):
            task = generate_task(rng, self.knobs)
            if is_playable(task):
                return task
        raise RuntimeError(f"alfworld: none of {MAX_REDRAWS} tasks drawn fits ALFWorld's rules; check the knobs")

    def _episode(self, task_id: int, task: HouseholdTask | Path) -> AlfworldEnv:
        game = task if isinstance(task, Path) else self.games.game_file(task)
        return AlfworldEnv(task_id, game, self.engines, self.horizon, self.cfg.invalid_penalty)

    @functools.cached_property
    def _eval_games(self) -> list[Path]:
        assert self.games_dir is not None
        return official_games(self.games_dir, self.knobs.eval_split, self.knobs.task_types)

    @functools.cached_property
    def _train_games(self) -> list[Path]:
        assert self.games_dir is not None
        games = official_games(self.games_dir, TRAIN_SPLIT, self.knobs.task_types)
        if not games:
            raise ValueError(
                f"env.games_dir={self.games_dir}: no playable {TRAIN_SPLIT} game of task types "
                f"{list(self.knobs.task_types)}"
            )
        random.Random(f"alfworld/{self.cfg.seed}").shuffle(games)
        return games

    def vocabulary(self) -> list[str]:
        """The words of ALFWorld's grammar and goal templates, the class names a game can show, numbers."""
        _, grammar = domain_and_grammar()
        text = [_PLACEHOLDER.sub(" ", a or b) for a, b in _GRAMMAR_TEXT.findall(grammar)]
        goal_library = import_alfworld("alfworld.gen.goal_library")
        for task_type in ALFRED_TASK_TYPE.values():
            text += [_PLACEHOLDER.sub(" ", t) for t in goal_library.gdict[task_type]["templates"]]
        text.append("a your task is to :")  # the indefinite article of every entity; the task line
        if self.games_dir is None:
            names = {alfred_class(t).lower() for t in RECEPTACLE_TYPES + OBJECT_TYPES + LAMP_TYPES}
            largest_number = max(self.knobs.num_receptacles, self.knobs.num_distractors + 2)
        else:
            alfred = constants()
            names = {c.lower() for c in alfred.OBJECTS} | {r.lower() for r in alfred.RECEPTACLES}
            largest_number = MAX_INSTANCE_NUMBER
        vocabulary = {w for piece in text for w in words(normalise(piece))} | names
        vocabulary |= {str(n) for n in range(1, largest_number + 1)}
        return sorted(vocabulary)
