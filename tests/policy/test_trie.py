import pytest

from gaca.policy.tokenizer import TextEncoder, build_word_tokenizer
from gaca.policy.trie import CommandTrie, TrieCache

from .conftest import WORDS

EOS = 1


@pytest.fixture(scope="module")
def tokenizer():
    return build_word_tokenizer(WORDS)


@pytest.fixture(scope="module")
def encode(tokenizer):
    return TextEncoder(tokenizer)


def ids(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False)


def test_prefix_commands_branch_on_eos(tokenizer, encode):
    trie = CommandTrie(["go to cabinet 1", "go to cabinet 12"], encode, EOS)
    node = trie.root
    for token in ids(tokenizer, "go to cabinet 1"):
        assert node.allowed == [token] or len(node.allowed) > 1
        node = node.children[token]
    assert node.allowed == sorted([EOS, *ids(tokenizer, "2")])
    assert node.forced is None


def test_forced_rest_and_command_lookup(tokenizer, encode):
    trie = CommandTrie(["take mug 1 from cabinet 1", "open drawer 2"], encode, EOS)
    take = ids(tokenizer, "take mug 1 from cabinet 1")
    assert trie.root.forced is None
    assert trie.root.children[take[0]].forced == [*take[1:], EOS]
    assert trie.command_for([*take, EOS]) == "take mug 1 from cabinet 1"
    assert trie.command_for(take) is None  # no eos: not a complete command
    assert trie.command_for([*ids(tokenizer, "open drawer 3"), EOS]) is None


def test_single_command_is_forced_from_the_root(tokenizer, encode):
    trie = CommandTrie(["search[red t-shirt]"], encode, EOS)
    assert trie.root.forced == [*ids(tokenizer, "search[red t-shirt]"), EOS]


def test_empty_admissible_set_is_rejected(tokenizer, encode):
    with pytest.raises(ValueError, match="at least one admissible command"):
        CommandTrie([], encode, EOS)


def test_cache_reuses_and_evicts(tokenizer, encode):
    cache = TrieCache(encode, EOS, max_size=2)
    first = cache.get(["open drawer 2"])
    assert cache.get(("open drawer 2",)) is first
    cache.get(["a"])
    cache.get(["b"])
    assert cache.get(["open drawer 2"]) is not first
