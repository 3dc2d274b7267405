"""The errand family: a credit-assignment testbed in ALFWorld's words (an early pivotal choice, then a
long routine walk whose end decides the outcome)."""

from gaca.envs.errand.engine import ErrandEnv
from gaca.envs.errand.family import ErrandFamily
from gaca.envs.errand.knobs import PRESETS, ErrandKnobs
from gaca.envs.errand.world import ErrandTask, generate_task

__all__ = ["PRESETS", "ErrandEnv", "ErrandFamily", "ErrandKnobs", "ErrandTask", "generate_task"]
