"""WebShop's page flow: the search page, paged results and item pages, each with its click commands.

Pages depend on the catalogue only (not on the task), so the storefront renders each one once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gaca.envs.shop.catalogue import Product
from gaca.envs.shop.lexicon import dollars
from gaca.envs.shop.search import ProductSearch

SEARCH, RESULTS, ITEM, DONE = "search", "results", "item", "done"
"""Page kinds."""
SEARCH_TEXT = "webshop [sep] search"
DONE_TEXT = "thank you for shopping with us ."

# What a command does: the page it leads to, or a change of the item page.
TO_SEARCH, TO_RESULTS, TO_ITEM, BACK_TO_RESULTS, SELECT_OPTION, BUY = range(6)


def click(label: str) -> str:
    return f"click[{label}]"


def search(query: str) -> str:
    return f"search[{query}]"


@dataclass(frozen=True)
class Page:
    """A rendered page: its text, its admissible commands and what each command does."""

    kind: str
    text: str
    commands: dict[str, tuple[int, Any]]
    """Command -> (what it does, its argument)."""
    admissible: tuple[str, ...]


DONE_PAGE = Page(DONE, DONE_TEXT, {}, ())


def _page(kind: str, text: str, commands: dict[str, tuple[int, Any]]) -> Page:
    return Page(kind, text, commands, tuple(commands))


class Storefront:
    """Renders and caches the pages of one catalogue."""

    def __init__(self, catalogue: tuple[Product, ...], product_search: ProductSearch, results_per_page: int) -> None:
        self.catalogue = catalogue
        self.product_search = product_search
        self.results_per_page = results_per_page
        self._results: dict[tuple[str, int], Page] = {}
        self._items: dict[tuple[int, tuple[str | None, ...]], Page] = {}

    def search_page(self, queries: tuple[str, ...]) -> Page:
        return _page(SEARCH, SEARCH_TEXT, {search(q): (TO_RESULTS, (q, 1)) for q in queries})

    def results_page(self, query: str, number: int) -> Page:
        """Page ``number`` (from 1) of the results for ``query``: id, title and price of each product."""
        key = (query, number)
        page = self._results.get(key)
        if page is None:
            ranking = self.product_search.ranking(query)
            last = max(1, -(-len(ranking) // self.results_per_page))
            parts = ["back to search"]
            commands: dict[str, tuple[int, Any]] = {click("back to search"): (TO_SEARCH, None)}
            if number > 1:
                parts.append("< prev")
                commands[click("< prev")] = (TO_RESULTS, (query, number - 1))
            parts.append(f"page {number} ( total results : {len(ranking)} )")
            if number < last:
                parts.append("next >")
                commands[click("next >")] = (TO_RESULTS, (query, number + 1))
            start = (number - 1) * self.results_per_page
            for index in ranking[start : start + self.results_per_page]:
                product = self.catalogue[index]
                parts += [product.item_id, product.title, f"$ {dollars(product.price_cents)}"]
                commands[click(product.item_id)] = (TO_ITEM, index)
            page = self._results[key] = _page(RESULTS, " [sep] ".join(parts), commands)
        return page

    def item_page(self, index: int, selection: tuple[str | None, ...]) -> Page:
        """The item page of product ``index`` with ``selection`` (one value or None per option type) clicked."""
        key = (index, selection)
        page = self._items.get(key)
        if page is None:
            product = self.catalogue[index]
            parts = ["back to search", "< prev"]
            commands: dict[str, tuple[int, Any]] = {
                click("back to search"): (TO_SEARCH, None),
                click("< prev"): (BACK_TO_RESULTS, None),
            }
            for position, (kind, values) in enumerate(product.options):
                parts += [kind, *values]
                for value in values:
                    commands[click(value)] = (SELECT_OPTION, (position, value))
            parts += [product.title, f"price : $ {dollars(product.price_cents)}"]
            clicked = [value for value in selection if value is not None]
            if clicked:
                parts.append("clicked : " + " , ".join(clicked))
            parts.append("buy now")
            commands[click("buy now")] = (BUY, None)
            page = self._items[key] = _page(ITEM, " [sep] ".join(parts), commands)
        return page
