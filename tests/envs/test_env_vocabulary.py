"""Every word that tasks, observations and admissible commands emit is in the family's vocabulary."""

import pytest

from gaca.envs import words

from .envtools import DIFFICULTIES, FAMILY_NAMES, expert_chooser, family, play, random_chooser

EPISODES = {"easy": 150, "paper": 60}


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_vocabulary_is_closed(name, difficulty):
    envs = family(name, difficulty)
    vocabulary = list(envs.vocabulary())
    assert len(vocabulary) == len(set(vocabulary))
    assert all(word == word.strip() and " " not in word for word in vocabulary)
    known = set(vocabulary)
    task_ids = list(envs.train_task_ids[: EPISODES[difficulty]]) + list(envs.eval_task_ids[:20])
    emitted: set[str] = set()
    for task_id in task_ids:
        for choose in (random_chooser(task_id), expert_chooser):
            env = envs.make(task_id)
            observations = [env.reset()] + [result.observation for _, result in play(env, choose)]
            for observation in observations:
                for text in (observation.text, observation.task):
                    assert text == " ".join(words(text)), "observations are emitted normalised"
                    emitted.update(words(text))
                for command in observation.admissible:
                    emitted.update(words(command))
    assert emitted <= known, sorted(emitted - known)


def test_vocabulary_stays_small_in_easy():
    assert len(list(family("household", "easy").vocabulary())) < 250
    assert len(list(family("shop", "easy").vocabulary())) < 250


def test_words_splits_commands_and_keeps_numbers_whole():
    assert words("search[cotton t-shirt red m]") == ["search", "[", "cotton", "t-shirt", "red", "m", "]"]
    assert words("click[< prev]") == ["click", "[", "<", "prev", "]"]
    assert words("put mug 1 in/on cabinet 2") == ["put", "mug", "1", "in/on", "cabinet", "2"]
    assert words("price : $ 23.99 [sep] buy now") == ["price", ":", "$", "23.99", "[sep]", "buy", "now"]
