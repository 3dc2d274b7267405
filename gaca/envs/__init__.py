"""Text environments: the embedded household (ALFWorld-style) and shop (WebShop-style) families, and
alfworld (ALFWorld's games on its real engine, with the `alfworld` extra).

``make_family(EnvConfig(name=...))`` builds a family; ``family.make(task_id)`` an episode;
``VectorEnv`` steps many episodes at once.
"""

from gaca.envs import alfworld, errand, household, shop  # noqa: F401  (registers the families)
from gaca.envs.base import Env, EnvFamily, Observation, PriorChoice, StepResult
from gaca.envs.config import EnvConfig
from gaca.envs.families import FAMILIES, make_family
from gaca.envs.text import words
from gaca.envs.vector import VectorEnv

__all__ = [
    "FAMILIES",
    "Env",
    "EnvConfig",
    "EnvFamily",
    "Observation",
    "PriorChoice",
    "StepResult",
    "VectorEnv",
    "make_family",
    "words",
]
