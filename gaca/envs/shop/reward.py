"""WebShop's purchase reward (Yao et al., 2022, Sec. 3.1), without its text-matching heuristics."""

from __future__ import annotations

from gaca.envs.shop.catalogue import Product
from gaca.envs.shop.goal import ShopGoal

WRONG_CATEGORY_FACTOR = 0.1
"""WebShop's r_type for a product whose type does not match (its lowest non-zero value)."""


def purchase_score(goal: ShopGoal, product: Product, clicked: dict[str, str]) -> float:
    """r = r_type * (|U_att & Y_att| + |U_opt & Y_opt| + 1[price < bound]) / (|U_att| + |U_opt| + 1).

    ``clicked`` maps option type -> the value selected before "buy now"; r_type is 1 for the asked
    category, else WRONG_CATEGORY_FACTOR. The task counts as solved exactly when r == 1.
    """
    matched_attributes = sum(a in product.attributes for a in goal.attributes)
    matched_options = sum(clicked.get(kind) == value for kind, value in goal.options)
    price_ok = product.price_cents < goal.price_bound_cents
    type_factor = 1.0 if product.category == goal.category else WRONG_CATEGORY_FACTOR
    return (
        type_factor * (matched_attributes + matched_options + price_ok) / (len(goal.attributes) + len(goal.options) + 1)
    )
