"""The alfworld family: ALFWorld's games on its real engine (the `alfworld` extra), official or generated."""

from gaca.envs.alfworld.engine import AlfworldEnv, EnginePool
from gaca.envs.alfworld.family import AlfworldFamily
from gaca.envs.alfworld.knobs import PRESETS, AlfworldKnobs

__all__ = ["PRESETS", "AlfworldEnv", "AlfworldFamily", "AlfworldKnobs", "EnginePool"]
