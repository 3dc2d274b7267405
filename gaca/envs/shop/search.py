"""BM25 search over the catalogue (bm25s), with each query's ranking cached."""

from __future__ import annotations

import bm25s
import numpy as np

from gaca.envs.shop.catalogue import Product
from gaca.envs.text import words


class ProductSearch:
    """Ranks products for a query by BM25 over their title, category and option values.

    Ties break by catalogue order so that a ranking never depends on the BM25 backend's sort.
    """

    def __init__(self, catalogue: tuple[Product, ...], max_results: int) -> None:
        self.max_results = max_results
        documents = [words(p.title) + [v for _, values in p.options for v in values] for p in catalogue]
        self._bm25 = bm25s.BM25()
        self._bm25.index(documents, show_progress=False)
        self._rankings: dict[str, tuple[int, ...]] = {}

    def ranking(self, query: str) -> tuple[int, ...]:
        """Indices of the products matching ``query`` (score > 0), best first, at most max_results."""
        ranking = self._rankings.get(query)
        if ranking is None:
            scores = self._bm25.get_scores(words(query))
            matching = np.flatnonzero(scores > 0)
            order = np.lexsort((matching, -scores[matching]))
            ranking = tuple(matching[order][: self.max_results].tolist())
            self._rankings[query] = ranking
        return ranking
