"""The shop expert: searches the instruction's key words, pages to the first product that can
score 1, clicks the asked options and buys. It replans from any page, so it recovers from detours."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gaca.envs.shop.goal import satisfies
from gaca.envs.shop.pages import ITEM, RESULTS, click, search

if TYPE_CHECKING:
    from gaca.envs.shop.engine import ShopEnv


def expert_action(env: ShopEnv) -> str:
    """The next command towards a purchase that scores 1."""
    if env.page.kind == ITEM:
        return _on_item_page(env)
    if env.page.kind == RESULTS:
        return _on_results_page(env)
    return search(env.goal.key_words)


def _on_results_page(env: ShopEnv) -> str:
    storefront = env.storefront
    ranking = storefront.product_search.ranking(env.query)
    rank = next((r for r, i in enumerate(ranking) if satisfies(env.goal, storefront.catalogue[i])), None)
    if rank is None:
        return click("back to search")
    wanted_page = rank // storefront.results_per_page + 1
    if wanted_page > env.results_number:
        return click("next >")
    if wanted_page < env.results_number:
        return click("< prev")
    return click(storefront.catalogue[ranking[rank]].item_id)


def _on_item_page(env: ShopEnv) -> str:
    if not satisfies(env.goal, env.storefront.catalogue[env.item]):
        return click("< prev")
    for (_, wanted), clicked in zip(env.goal.options, env.selection):
        if clicked != wanted:
            return click(wanted)
    return click("buy now")
