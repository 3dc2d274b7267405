"""Token-id prefix tries of admissible commands, the state machine of constrained decoding."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

Encode = Callable[[Sequence[str]], list[list[int]]]
"""Texts -> token ids without special tokens (``TextEncoder``)."""


class TrieNode:
    """A prefix of one or more commands' token ids (each ending in eos)."""

    __slots__ = ("children", "allowed", "command", "forced")

    def __init__(self) -> None:
        self.children: dict[int, TrieNode] = {}
        self.allowed: list[int] = []
        """The token ids that may come next, ascending."""
        self.command: str | None = None
        """Set on the node reached by a command's eos: the command itself."""
        self.forced: list[int] | None = None
        """The only possible rest of the response (ending in eos) when nothing is left to choose, else None."""


class CommandTrie:
    """The prefix trie of ``commands``, each encoded by ``encode`` and followed by ``eos_token_id``.

    Commands whose token ids coincide (possible only through unknown words of a word-level tokenizer)
    share one path; the first of them is the one decoded.
    """

    def __init__(self, commands: Sequence[str], encode: Encode, eos_token_id: int) -> None:
        if not commands:
            raise ValueError("constrained decoding needs at least one admissible command, got none")
        self.root = TrieNode()
        encoded = encode(commands)
        for command, ids in zip(commands, encoded):
            node = self.root
            for token in [*ids, eos_token_id]:
                node = node.children.setdefault(token, TrieNode())
            if node.command is None:
                node.command = command
        _finish(self.root)

    def command_for(self, response_ids: Sequence[int]) -> str | None:
        """The command spelled by ``response_ids`` (eos included), or None when they spell none."""
        node = self.root
        for token in response_ids:
            child = node.children.get(token)
            if child is None:
                return None
            node = child
        return node.command


def _finish(root: TrieNode) -> None:
    """Fill ``allowed`` and ``forced`` bottom-up, without recursion (commands can be long)."""
    order: list[TrieNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children.values())
    for node in reversed(order):
        node.allowed = sorted(node.children)
        if not node.children:
            node.forced = []
        elif len(node.children) == 1:
            ((token, child),) = node.children.items()
            node.forced = None if child.forced is None else [token, *child.forced]


class TrieCache:
    """Tries by admissible set, least recently used first out: a set recurs across steps and group members."""

    def __init__(self, encode: Encode, eos_token_id: int, max_size: int = 4096) -> None:
        self.encode = encode
        self.eos_token_id = eos_token_id
        self.max_size = max_size
        self._tries: OrderedDict[tuple[str, ...], CommandTrie] = OrderedDict()

    def get(self, commands: Sequence[str]) -> CommandTrie:
        key = tuple(commands)
        trie = self._tries.get(key)
        if trie is None:
            trie = CommandTrie(key, self.encode, self.eos_token_id)
            self._tries[key] = trie
            if len(self._tries) > self.max_size:
                self._tries.popitem(last=False)
        else:
            self._tries.move_to_end(key)
        return trie
