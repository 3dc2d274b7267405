"""The shop family (WebShop-style): registered as "shop"."""

from __future__ import annotations

import random

from gaca.envs.base import EnvFamily
from gaca.envs.config import EnvConfig
from gaca.envs.families import FAMILIES
from gaca.envs.shop.catalogue import generate_catalogue
from gaca.envs.shop.engine import ShopEnv
from gaca.envs.shop.goal import ShopGoal, generate_goal
from gaca.envs.shop.knobs import PRESETS
from gaca.envs.shop.lexicon import (
    BRANDS,
    CATEGORIES,
    CATEGORY_ATTRIBUTES,
    CATEGORY_OPTIONS,
    OPTION_VALUES,
    PRICE_BOUNDS_CENTS,
    PRICES_CENTS,
    dollars,
)
from gaca.envs.shop.pages import DONE_TEXT, SEARCH_TEXT, Storefront
from gaca.envs.shop.search import ProductSearch
from gaca.envs.text import words

_FIXED_TEXT = (
    SEARCH_TEXT,
    DONE_TEXT,
    "back to search [sep] < prev [sep] page ( total results : ) [sep] next > $",
    "price : $ [sep] clicked : , [sep] buy now",
    "search[] click[]",
    "i need a with and , and price lower than dollars",
)


@FAMILIES.register("shop")
class ShopFamily(EnvFamily[ShopGoal, ShopEnv]):
    """One generated catalogue searched with BM25 and WebShop's page flow; horizon 15 by default.

    As in WebShop, training and evaluation share the catalogue but never an instruction.
    """

    default_horizon = 15
    knob_presets = PRESETS

    def __init__(self, cfg: EnvConfig) -> None:
        super().__init__(cfg)
        self.catalogue = generate_catalogue(random.Random(f"shop/{cfg.seed}/catalogue"), self.knobs)
        self.storefront = Storefront(
            self.catalogue, ProductSearch(self.catalogue, self.knobs.max_results), self.knobs.results_per_page
        )

    def _generate(self, rng: random.Random) -> ShopGoal:
        return generate_goal(rng, self.catalogue, self.storefront.product_search, self.knobs, self.horizon)

    def task_signature(self, task: ShopGoal) -> str:
        return task.instruction

    def _episode(self, task_id: int, task: ShopGoal) -> ShopEnv:
        return ShopEnv(task_id, task, self.storefront, self.horizon, self.cfg.invalid_penalty)

    def vocabulary(self) -> list[str]:
        vocabulary = {w for text in _FIXED_TEXT for w in words(text)}
        for category in CATEGORIES[: self.knobs.num_categories]:
            vocabulary |= {category, *CATEGORY_ATTRIBUTES[category]}
            for kind in CATEGORY_OPTIONS[category][: self.knobs.num_option_types]:
                vocabulary |= {*words(kind), *OPTION_VALUES[kind]}
        vocabulary |= set(BRANDS) | {p.item_id for p in self.catalogue}
        vocabulary |= {dollars(c) for c in PRICES_CENTS + PRICE_BOUNDS_CENTS}
        vocabulary |= {str(n) for n in range(self.knobs.max_results + 1)}
        return sorted(vocabulary)
