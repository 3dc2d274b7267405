"""WebShop's purchase reward on hand-computed cases; success exactly when it is 1."""

import pytest

from gaca.envs.shop import Product, ShopGoal, purchase_score

from .envtools import family

GOAL = ShopGoal(
    category="t-shirt",
    attributes=("cotton", "slim"),
    options=(("color", "red"), ("size", "m")),
    price_bound_cents=3000,
    instruction="i need a cotton slim t-shirt with color red and size m , and price lower than 30.00 dollars",
    queries=("cotton slim t-shirt red m",),
    key_words="cotton slim t-shirt red m",
)


def product(category="t-shirt", attributes=("cotton", "slim", "vintage"), price_cents=2499):
    options = (("color", ("blue", "red")), ("size", ("s", "m")))
    return Product("b0test", category, "acme", attributes, options, price_cents, f"acme {category}")


@pytest.mark.parametrize(
    "bought, clicked, expected",
    [
        (product(), {"color": "red", "size": "m"}, 1.0),  # (2 + 2 + 1) / 5
        (product(), {"color": "red"}, 0.8),  # size not chosen: (2 + 1 + 1) / 5
        (product(), {"color": "blue", "size": "s"}, 0.6),  # both options wrong: (2 + 0 + 1) / 5
        (product(attributes=("cotton", "loose")), {"color": "red", "size": "m"}, 0.8),  # (1 + 2 + 1) / 5
        (product(price_cents=3499), {"color": "red", "size": "m"}, 0.8),  # too expensive: (2 + 2 + 0) / 5
        (product(attributes=("loose",), price_cents=9999), {}, 0.0),
        (product(category="hoodie"), {"color": "red", "size": "m"}, 0.1),  # wrong type: 0.1 * 5 / 5
        (product(category="hoodie", attributes=("cotton",)), {"color": "red"}, 0.1 * 3 / 5),
    ],
)
def test_hand_computed_scores(bought, clicked, expected):
    assert purchase_score(GOAL, bought, clicked) == pytest.approx(expected)


def test_a_partial_purchase_ends_the_episode_without_reward():
    """Buying the right product without choosing its options: done, score < 1, reward 0."""
    shop = family("shop", "easy")
    env = shop.make(shop.eval_task_ids[0])
    env.reset()
    while env.page.kind != "item":
        env.step(env.expert_action())
    result = env.step("click[buy now]")
    assert result.done and not result.won and not result.invalid
    assert result.reward == 0.0
    options = len(env.goal.options)
    attributes = len(env.goal.attributes)
    assert result.score == pytest.approx((attributes + 0 + 1) / (attributes + options + 1))
    assert result.observation.admissible == ()
