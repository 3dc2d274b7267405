"""The word units of environment text, shared by the families' vocabularies and the tokenizer.

Observations and tasks are emitted already normalised (lowercase, punctuation as separate words),
so for them ``words`` is ``str.split``; it also splits commands such as ``click[buy now]``.
"""

from __future__ import annotations

import re

SEPARATOR = "[sep]"
"""The WebShop page separator, kept as one word."""
PUNCTUATION = ("[", "]", "(", ")", ",", ".", ":", "$")

_WORD = re.compile(r"\[sep\]|\d+\.\d+|[^\s\[\](),.:$]+|[\[\](),.:$]")


def words(text: str) -> list[str]:
    """Split ``text`` into vocabulary units: words, decimal numbers, "[sep]" and punctuation marks.

    >>> words("click[buy now]")
    ['click', '[', 'buy', 'now', ']']
    >>> words("price : $ 23.99 [sep] on the desk 1 , you see a pen 1 .")
    ['price', ':', '$', '23.99', '[sep]', 'on', 'the', 'desk', '1', ',', 'you', 'see', 'a', 'pen', '1', '.']
    """
    return _WORD.findall(text)
