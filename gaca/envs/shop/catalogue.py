"""The generated product catalogue: categories, attributes, options and prices."""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

from gaca.envs.shop.knobs import ShopKnobs
from gaca.envs.shop.lexicon import (
    BRANDS,
    CATEGORIES,
    CATEGORY_ATTRIBUTES,
    CATEGORY_OPTIONS,
    OPTION_VALUES,
    PRICES_CENTS,
)

_ID_CHARACTERS = string.digits + string.ascii_lowercase


@dataclass(frozen=True)
class Product:
    """One catalogue entry as the item page shows it."""

    item_id: str
    """WebShop-style lowercase ASIN, e.g. "b07x3k"."""
    category: str
    brand: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    """(option type, offered values) in display order."""
    price_cents: int
    title: str
    """brand, attributes and category, e.g. "acme cotton slim t-shirt"."""


def generate_catalogue(rng: random.Random, knobs: ShopKnobs) -> tuple[Product, ...]:
    """``knobs.catalogue_size`` products spread evenly over the first ``knobs.num_categories`` categories."""
    categories = CATEGORIES[: knobs.num_categories]
    item_ids = _unique_item_ids(rng, knobs.catalogue_size)
    products = []
    for index, item_id in enumerate(item_ids):
        category = categories[index % len(categories)]
        brand = rng.choice(BRANDS)
        attributes = tuple(rng.sample(CATEGORY_ATTRIBUTES[category], knobs.attributes_per_product))
        options = tuple(
            (kind, _offered_values(rng, OPTION_VALUES[kind], knobs.options_per_type))
            for kind in CATEGORY_OPTIONS[category][: knobs.num_option_types]
        )
        products.append(
            Product(
                item_id=item_id,
                category=category,
                brand=brand,
                attributes=attributes,
                options=options,
                price_cents=rng.choice(PRICES_CENTS),
                title=" ".join((brand, *attributes, category)),
            )
        )
    return tuple(products)


def _offered_values(rng: random.Random, values: tuple[str, ...], count: int) -> tuple[str, ...]:
    """``count`` of ``values``, kept in the lexicon's order (xs before s before m ...)."""
    chosen = set(rng.sample(values, count))
    return tuple(v for v in values if v in chosen)


def _unique_item_ids(rng: random.Random, count: int) -> list[str]:
    item_ids: dict[str, None] = {}
    while len(item_ids) < count:
        item_ids["b0" + "".join(rng.choices(_ID_CHARACTERS, k=4))] = None
    return list(item_ids)
