"""The registry of environment families and the one way to build a family from its configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gaca.registry import Registry

if TYPE_CHECKING:
    from gaca.envs.base import EnvFamily
    from gaca.envs.config import EnvConfig

FAMILIES: Registry[type[EnvFamily]] = Registry("environment family")
"""Family name -> ``EnvFamily`` subclass: "errand" (the credit-assignment testbed), "household"
(ALFWorld-style), "shop" (WebShop-style) and "alfworld" (ALFWorld's real engine)."""


def make_family(cfg: EnvConfig) -> EnvFamily:
    """Build the family ``cfg.name`` (its task split, knobs and, for the shop, its catalogue; for alfworld
    the official game list or the generated-game cache)."""
    return FAMILIES.get(cfg.name)(cfg)
