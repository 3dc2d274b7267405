"""The shop family (WebShop-style): a generated catalogue, BM25 search, WebShop's pages and reward."""

from gaca.envs.shop.catalogue import Product, generate_catalogue
from gaca.envs.shop.engine import ShopEnv
from gaca.envs.shop.family import ShopFamily
from gaca.envs.shop.goal import ShopGoal, generate_goal, satisfies
from gaca.envs.shop.knobs import PRESETS, ShopKnobs
from gaca.envs.shop.reward import purchase_score

__all__ = [
    "PRESETS",
    "Product",
    "ShopEnv",
    "ShopFamily",
    "ShopGoal",
    "ShopKnobs",
    "generate_catalogue",
    "generate_goal",
    "purchase_score",
    "satisfies",
]
