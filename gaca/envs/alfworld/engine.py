"""One ALFWorld episode on the real engine: TextWorld's PDDL environment with ALFWorld's wrappers.

Each engine (``textworld.envs.PddlEnv`` wrapped in ``AlfredDemangler`` and ``AlfredInfos``, the stack
``AlfredTWEnv`` registers with TextWorld's gym) loads its own copy of fast-downward's library and never
unloads it, so engines are pooled and reused across episodes rather than made per episode.
"""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Any

from gaca.envs.alfworld.lexicon import import_alfworld
from gaca.envs.base import Env, Observation, StepResult
from gaca.envs.text import words

NOTHING_HAPPENS = "Nothing happens."
"""TextWorld's PDDL engine's reply to a command it does not know (the state is left as it was)."""
BANNER = "-="
"""ALFWorld's intro starts with "-= Welcome to TextWorld, ALFRED! =-"."""
TASK_PREFIX = "your task is to"
META_COMMANDS = ("help",)
"""Admissible in the engine but no action in the world; left out of the commands shown to the agent
(as verl-agent's prompts do) and so treated as invalid."""


def normalise(text: str) -> str:
    """The project's wording of engine text: lowercase, punctuation as separate words, single spaces."""
    return " ".join(words(text.lower()))


def split_intro(feedback: str) -> tuple[str, str]:
    """The initial feedback as (observation, task), both normalised; the welcome banner is dropped."""
    paragraphs = [p.strip() for p in feedback.split("\n\n") if p.strip() and not p.strip().startswith(BANNER)]
    tasks = [p for p in paragraphs if p.lower().startswith(TASK_PREFIX)]
    if len(tasks) != 1:
        raise ValueError(f"ALFWorld's intro should hold one 'Your task is to: ...' paragraph, got {feedback!r}")
    room = " ".join(p for p in paragraphs if p is not tasks[0])
    return normalise(room), normalise(tasks[0])


def new_engine() -> Any:
    """TextWorld's PDDL environment with ALFWorld's wrappers, asking for what an episode needs."""
    textworld = import_alfworld("textworld")
    pddl = import_alfworld("textworld.envs")
    wrappers = import_alfworld("alfworld.agents.environment.alfred_tw_env")
    infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile", "walkthrough"])
    return wrappers.AlfredInfos(wrappers.AlfredDemangler(pddl.PddlEnv(infos), shuffle=False))


def plan(engine: Any) -> list[str]:
    """The commands of fast-downward's plan from the engine's current state ([] when there is none).

    This is what the engine computes for ``policy_commands`` after every step when asked to; calling it
    only when the expert is consulted saves a planner call per step.
    """
    pddl = engine.unwrapped
    return list(pddl._pddl_state.replan(pddl._entity_infos))


class EnginePool:
    """Idle engines, each remembering the game it has loaded; loading a game costs more than a reset."""

    def __init__(self) -> None:
        self._idle: list[tuple[Any, str]] = []

    def acquire(self, game: Path | dict[str, Any]) -> Any:
        """An engine with ``game`` (a game file, or a game file's content) loaded; reset it before playing."""
        key = str(game) if isinstance(game, Path) else ""
        for index, (engine, loaded) in enumerate(self._idle):
            if key and loaded == key:
                del self._idle[index]
                return engine
        engine = self._idle.pop()[0] if self._idle else new_engine()
        engine.load(key or game)
        return engine

    def release(self, engine: Any, game: Path | dict[str, Any]) -> None:
        self._idle.append((engine, str(game) if isinstance(game, Path) else ""))

    def walkthrough(self, content: dict[str, Any]) -> list[str]:
        """The planner's walkthrough of a game from its content (how generated games are checked)."""
        engine = self.acquire(content)
        try:
            return list(engine.reset()["extra.walkthrough"])
        finally:
            self.release(engine, content)


class AlfworldEnv(Env):
    """An episode of one ALFWorld game file; observations are the engine's text, normalised.

    The observation, and so the anchor, is the engine's feedback to the command just taken (the room
    description after a reset): ALFWorld shows no move counter or history, so rollouts of one game that
    meet in the same situation share an anchor. An inadmissible command is not sent to the engine,
    which would answer "Nothing happens." and leave its state as it was (it would accept "help" and
    padded variants of admissible commands, which count as invalid here as in the household family).
    """

    def __init__(self, task_id: int, game: Path, engines: EnginePool, horizon: int, invalid_penalty: float) -> None:
        self.task_id = task_id
        self.game = game
        self.horizon = horizon
        self.invalid_penalty = invalid_penalty
        self.walkthrough: tuple[str, ...] = ()
        """The planner's commands from the initial state (set by ``reset``)."""
        self._engines = engines
        self._engine: Any = None
        self._release: weakref.finalize | None = None
        self.done = True

    def reset(self) -> Observation:
        if self._engine is None:
            self._engine = self._engines.acquire(self.game)
            # An episode dropped before its end still hands its engine back.
            self._release = weakref.finalize(self, self._engines.release, self._engine, self.game)
        state = self._engine.reset()
        text, self.task = split_intro(state.feedback)
        self.walkthrough = tuple(state["extra.walkthrough"])
        self.steps = 0
        self.done = False
        self._observe(text, state)
        return self.observation

    def step(self, action: str) -> StepResult:
        if self.done:
            raise RuntimeError(f"alfworld task {self.task_id}: step() after the episode ended; call reset()")
        self.steps += 1
        if action not in self._admissible:
            nothing = normalise(NOTHING_HAPPENS)
            self.observation = Observation(nothing, nothing, self.task, self.observation.admissible)
            self._end(self.steps >= self.horizon)
            return StepResult(self.observation, -self.invalid_penalty, self.done, False, True)
        state, _, _ = self._engine.step(action)
        won = bool(state["won"])
        self._observe(normalise(state.feedback), state)
        self._end(won or self.steps >= self.horizon)
        return StepResult(self.observation, 1.0 if won else 0.0, self.done, won, False, 1.0 if won else 0.0)

    def expert_action(self) -> str:
        if self.done:
            raise RuntimeError(f"alfworld task {self.task_id}: expert_action() after the episode ended")
        commands = plan(self._engine)
        if not commands:
            raise RuntimeError(f"alfworld task {self.task_id}: the planner finds no plan from here ({self.game})")
        return commands[0]

    def _observe(self, text: str, state: Any) -> None:
        admissible = tuple(c for c in state["admissible_commands"] if c not in META_COMMANDS)
        self._admissible = frozenset(admissible)
        self.observation = Observation(text, text, self.task, admissible)

    def _end(self, done: bool) -> None:
        """Mark the episode done and hand the engine back to the pool."""
        self.done = done
        if done and self._release is not None:
            self._release()
            self._engine = self._release = None
