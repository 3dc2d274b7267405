from gaca.policy.prompt import PromptEncoder, build_prompt, template_vocabulary
from gaca.policy.tokenizer import build_word_tokenizer

from .conftest import WORDS

HISTORY = [("you are in the kitchen .", "go to cabinet 1"), ("the cabinet is closed .", "open cabinet 1")]


def test_prompt_counts_all_steps_and_shows_the_last_ones():
    prompt = build_prompt("put a mug in cabinet 1", "you see a mug .", HISTORY, None, history_length=1)
    assert "prior to this step you took 2 steps" in prompt
    assert "[ observation 2 : the cabinet is closed . action 2 : open cabinet 1 ]" in prompt
    assert "go to cabinet 1" not in prompt
    assert "now at step 3 your observation is : you see a mug ." in prompt
    assert "admissible" not in prompt
    assert prompt.endswith("your task is to : put a mug in cabinet 1 . your action :")


def test_first_step_and_admissible_list():
    prompt = build_prompt("buy a shirt", "search page", [], ["search[red shirt]", "click[b07abc]"], history_length=2)
    assert "prior" not in prompt and "observation 1" not in prompt
    assert "admissible actions : [ search[red shirt] , click[b07abc] ]" in prompt


def test_template_vocabulary_covers_the_template():
    tokenizer = build_word_tokenizer([*WORDS, *template_vocabulary()])
    prompt = build_prompt("open cabinet 1", "you are in the kitchen .", HISTORY * 6, ["go to cabinet 1"], 2)
    assert tokenizer.unk_token_id not in tokenizer.encode(prompt, add_special_tokens=False)


def test_truncation_keeps_the_most_recent_tail():
    tokenizer = build_word_tokenizer([*WORDS, *template_vocabulary()])
    prompt = build_prompt("open cabinet 1", "the mug is on the countertop . " * 20, HISTORY, None, 2)
    full = tokenizer.encode(prompt, add_special_tokens=False)
    [ids] = PromptEncoder.for_tokenizer(tokenizer, 24)([prompt])
    assert len(full) > 24 and ids == full[-24:]
    assert tokenizer.decode(ids).endswith("your task is to : open cabinet 1 . your action :")
    [short] = PromptEncoder.for_tokenizer(tokenizer, 1000)([prompt])
    assert short == full


def test_chat_template_wraps_without_being_cut():
    tokenizer = build_word_tokenizer([*WORDS, *template_vocabulary(), "user", "assistant"])
    tokenizer.chat_template = "{% for m in messages %}<s> user : {{ m['content'] }} </s>{% endfor %} assistant :"
    encoder = PromptEncoder.for_tokenizer(tokenizer, 20)
    prompt = build_prompt("open cabinet 1", "the mug is on the countertop . " * 20, HISTORY, None, 2)
    [ids] = encoder([prompt])
    assert len(ids) == 20
    assert ids[:3] == list(encoder.head) == tokenizer.encode("<s> user :", add_special_tokens=False)
    assert ids[-3:] == list(encoder.tail) == tokenizer.encode("</s> assistant :", add_special_tokens=False)
    assert tokenizer.decode(ids[3:-3]).endswith("your action :")
