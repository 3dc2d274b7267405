"""Shopping goals: a WebShop-style instruction drawn from a catalogue product, and its search queries."""

from __future__ import annotations

import random
from dataclasses import dataclass

from gaca.envs.shop.catalogue import Product
from gaca.envs.shop.knobs import ShopKnobs
from gaca.envs.shop.lexicon import CATEGORIES, PRICE_STEP_CENTS, dollars
from gaca.envs.shop.search import ProductSearch

MAX_DRAWS = 100


@dataclass(frozen=True)
class ShopGoal:
    """What the instruction asks for (WebShop's U_att, U_opt, u_price) and the searches offered."""

    category: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    """(option type, wanted value)."""
    price_bound_cents: int
    """The price must be lower than this."""
    instruction: str
    """e.g. "i need a cotton t-shirt with color red and size m , and price lower than 30.00 dollars"."""
    queries: tuple[str, ...]
    """The admissible search queries: the instruction's key words, the bare category, and the
    key words with a wrong category; in a task-specific order."""
    key_words: str
    """The query made of the instruction's key words (the planner's search)."""


def satisfies(goal: ShopGoal, product: Product) -> bool:
    """Whether buying ``product`` with the right options can score 1."""
    offered = dict(product.options)
    return (
        product.category == goal.category
        and all(a in product.attributes for a in goal.attributes)
        and all(value in offered.get(kind, ()) for kind, value in goal.options)
        and product.price_cents < goal.price_bound_cents
    )


def generate_goal(
    rng: random.Random, catalogue: tuple[Product, ...], search: ProductSearch, knobs: ShopKnobs, horizon: int
) -> ShopGoal:
    """Describe a random product; redraw until the key-word search finds a match the planner can buy in time."""
    categories = CATEGORIES[: knobs.num_categories]
    for _ in range(MAX_DRAWS):
        product = rng.choice(catalogue)
        attributes = tuple(rng.sample(product.attributes, knobs.instruction_attributes))
        options = tuple((kind, rng.choice(values)) for kind, values in product.options)
        # the next round bound above the price, sometimes one step more (as WebShop's are loose)
        price_bound = (product.price_cents // PRICE_STEP_CENTS + 1 + rng.randrange(2)) * PRICE_STEP_CENTS
        values = tuple(value for _, value in options)
        key_words = " ".join((*attributes, product.category, *values))
        wrong_category = rng.choice([c for c in categories if c != product.category])
        queries = list(dict.fromkeys((key_words, product.category, " ".join((*attributes, wrong_category, *values)))))
        rng.shuffle(queries)
        goal = ShopGoal(
            category=product.category,
            attributes=attributes,
            options=options,
            price_bound_cents=price_bound,
            instruction=_instruction(product.category, attributes, options, price_bound),
            queries=tuple(queries),
            key_words=key_words,
        )
        ranking = search.ranking(key_words)
        rank = next((r for r, i in enumerate(ranking) if satisfies(goal, catalogue[i])), None)
        # search, one "next >" per page skipped, the item, one click per option, buy
        if rank is not None and 2 + rank // knobs.results_per_page + len(options) + 1 <= horizon:
            return goal
    raise RuntimeError(
        f"no shop goal reachable within horizon {horizon} in {MAX_DRAWS} draws; "
        "raise the horizon, max_results or results_per_page"
    )


def _instruction(
    category: str, attributes: tuple[str, ...], options: tuple[tuple[str, str], ...], price_bound: int
) -> str:
    wanted = " ".join((*attributes, category))
    if options:
        wanted += " with " + " and ".join(f"{kind} {value}" for kind, value in options)
    return f"i need a {wanted} , and price lower than {dollars(price_bound)} dollars"
