"""The shop family's difficulty knobs and its two presets."""

from __future__ import annotations

from dataclasses import dataclass

from gaca.envs.knobs import check_int
from gaca.envs.shop.lexicon import CATEGORIES


@dataclass(frozen=True)
class ShopKnobs:
    """How big the catalogue is, how specific instructions are and how results are paged."""

    catalogue_size: int = 48
    """Products in the catalogue (one catalogue per family, drawn from cfg.seed)."""
    num_categories: int = 4
    """Product categories in use (the first ones of lexicon.CATEGORIES)."""
    attributes_per_product: int = 2
    """Attributes each product has (they appear in its title)."""
    instruction_attributes: int = 1
    """Attributes an instruction asks for, at most attributes_per_product."""
    num_option_types: int = 1
    """Option types per product (color, then size), capped by what the category has."""
    options_per_type: int = 2
    """Values offered per option type on an item page."""
    results_per_page: int = 3
    """Search results shown per page (WebShop: 10)."""
    max_results: int = 6
    """Search results over all pages (WebShop: 50)."""

    def validate(self) -> None:
        check_int("catalogue_size", self.catalogue_size, 10, 5000)
        check_int("num_categories", self.num_categories, 2, len(CATEGORIES))
        check_int("attributes_per_product", self.attributes_per_product, 1, 8)
        check_int("instruction_attributes", self.instruction_attributes, 0, self.attributes_per_product)
        check_int("num_option_types", self.num_option_types, 0, 2)
        check_int("options_per_type", self.options_per_type, 1, 6)
        check_int("results_per_page", self.results_per_page, 1, 20)
        check_int("max_results", self.max_results, self.results_per_page, 100)


PRESETS = {
    "easy": ShopKnobs(),
    "paper": ShopKnobs(
        catalogue_size=1000,
        num_categories=len(CATEGORIES),
        attributes_per_product=4,
        instruction_attributes=2,
        num_option_types=2,
        options_per_type=4,
        results_per_page=10,
        max_results=50,
    ),
}
"""easy: a tiny policy learns it on CPU and a random policy sometimes succeeds; paper: WebShop-like sizes."""
