from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from gaca.policy.tokenizer import SPECIAL_TOKENS, TextEncoder, build_word_tokenizer, is_word_tokenizer, load_tokenizer

from .conftest import WORDS

TEXT = "take mug 1 from countertop 12. search[red cotton t-shirt] click[b07abc] a:b > c, <d>"


def test_special_tokens_come_first():
    tokenizer = build_word_tokenizer(WORDS)
    assert tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [0, 1, 2, 3]
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.bos_token_id, tokenizer.unk_token_id) == (
        0,
        1,
        2,
        3,
    )


def test_ids_do_not_depend_on_word_order():
    assert build_word_tokenizer(WORDS).get_vocab() == build_word_tokenizer(reversed(WORDS)).get_vocab()


def test_splits_whitespace_punctuation_and_digits():
    tokenizer = build_word_tokenizer(WORDS)
    tokens = tokenizer.tokenize(TEXT)
    assert tokens[:8] == ["take", "mug", "1", "from", "countertop", "1", "2", "."]
    assert tokens[8:17] == ["search", "[", "red", "cotton", "t", "-", "shirt", "]", "click"]
    pieces = [piece for piece, _ in tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str(TEXT)]
    assert pieces[-9:] == ["a", ":", "b", ">", "c", ",", "<", "d", ">"]


def test_vocabulary_words_are_known_pieces_and_others_unknown():
    tokenizer = build_word_tokenizer(WORDS)
    ids = tokenizer.encode("search[red cotton t-shirt] click[b07abc] 7", add_special_tokens=False)
    assert tokenizer.unk_token_id not in ids  # "t-shirt", "b07abc" and digits were split like the text
    assert tokenizer.encode("zebra", add_special_tokens=False) == [tokenizer.unk_token_id]


def test_decode_round_trips_known_words():
    tokenizer = build_word_tokenizer(WORDS)
    text = "go to cabinet 1 , open drawer 2 ."
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text


def test_save_and_load_keep_the_encoding(tmp_path):
    tokenizer = build_word_tokenizer(WORDS)
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "qwen2"}')  # as next to a saved model
    loaded = load_tokenizer(tmp_path)
    assert loaded.encode(TEXT, add_special_tokens=False) == tokenizer.encode(TEXT, add_special_tokens=False)
    assert loaded.get_vocab() == tokenizer.get_vocab()
    assert (loaded.pad_token_id, loaded.eos_token_id) == (0, 1)


TEXTS = [
    TEXT,
    "You arrive at CounterTop 1.  On the countertop 1, you see a mug 1,\tand a t-shirt\n(size m) for $30.00 zebra",
    "",
    "   leading and trailing   ",
    "info\x1fseparator: python splits here, the tokenizer does not",
]


def test_text_encoder_equals_the_tokenizer(tmp_path):
    tokenizer = build_word_tokenizer(WORDS)
    encode = TextEncoder(tokenizer)
    expected = tokenizer(TEXTS, add_special_tokens=False)["input_ids"]
    assert encode(TEXTS) == expected
    assert encode(TEXTS) == expected  # again, from the per-word memo
    assert encode([TEXTS[1]]) == [expected[1]]
    tokenizer.save_pretrained(tmp_path)
    loaded = load_tokenizer(tmp_path)
    assert is_word_tokenizer(loaded) and TextEncoder(loaded)(TEXTS) == expected


def test_text_encoder_calls_other_tokenizers_as_they_are():
    backend = Tokenizer(models.WordLevel(vocab={"<unk>": 0, "a": 1, "b": 2, "a b": 3}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(" ", behavior="removed")  # not the word pre-tokenizer
    other = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>")
    assert not is_word_tokenizer(other)
    assert TextEncoder(other)(["a b", "b"]) == other(["a b", "b"], add_special_tokens=False)["input_ids"]


def test_text_encoder_falls_back_where_words_do_not_encode_alone():
    spanning = build_word_tokenizer(WORDS)
    spanning.add_tokens(["go to"])  # an added token across whitespace: words no longer encode alone
    assert not is_word_tokenizer(spanning)
    assert (
        TextEncoder(spanning)(["go to cabinet 1"])
        == spanning(["go to cabinet 1"], add_special_tokens=False)["input_ids"]
    )
    padded = build_word_tokenizer(WORDS)
    encode = TextEncoder(padded)
    padded.backend_tokenizer.enable_padding(pad_id=0, pad_to_multiple_of=4)  # as a padded call can leave it
    texts = ["go to cabinet 1", "open drawer 2 ."]
    assert encode(texts) == padded(texts, add_special_tokens=False)["input_ids"]
    assert encode([]) == [] and encode(iter(texts)) == encode(texts)
