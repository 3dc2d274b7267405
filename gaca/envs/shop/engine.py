"""One shop episode: search, browse result pages, pick options, buy; scored by WebShop's reward."""

from __future__ import annotations

from gaca.envs.base import Env, Observation, StepResult
from gaca.envs.shop.goal import ShopGoal
from gaca.envs.shop.pages import (
    BACK_TO_RESULTS,
    BUY,
    DONE_PAGE,
    SELECT_OPTION,
    TO_ITEM,
    TO_RESULTS,
    TO_SEARCH,
    Page,
    Storefront,
)
from gaca.envs.shop.planner import expert_action
from gaca.envs.shop.reward import purchase_score


class ShopEnv(Env):
    """The state is the page shown plus where "< prev" leads and the options clicked so far.

    An inadmissible command leaves the page unchanged. Buying ends the episode; the step reward is
    1.0 only when the purchase scores 1, and the score itself is reported in ``StepResult.score``.
    """

    def __init__(
        self, task_id: int, goal: ShopGoal, storefront: Storefront, horizon: int, invalid_penalty: float
    ) -> None:
        self.task_id = task_id
        self.goal = goal
        self.storefront = storefront
        self.horizon = horizon
        self.invalid_penalty = invalid_penalty
        self._search_page = storefront.search_page(goal.queries)

    def reset(self) -> Observation:
        self.query = ""
        self.results_number = 1
        self.item = -1
        self.selection: tuple[str | None, ...] = ()
        self.steps = 0
        self.done = False
        return self._show(self._search_page)

    def step(self, action: str) -> StepResult:
        if self.done:
            raise RuntimeError(f"shop task {self.task_id}: step() after the episode ended; call reset()")
        self.steps += 1
        command = self.page.commands.get(action)
        if command is None:
            self.done = self.steps >= self.horizon
            return StepResult(self.observation, -self.invalid_penalty, self.done, False, True)
        effect, argument = command
        storefront = self.storefront
        if effect == BUY:
            product = storefront.catalogue[self.item]
            clicked = {kind: value for (kind, _), value in zip(product.options, self.selection) if value is not None}
            score = purchase_score(self.goal, product, clicked)
            won = score == 1.0
            self.done = True
            return StepResult(self._show(DONE_PAGE), 1.0 if won else 0.0, True, won, False, score)
        if effect == TO_RESULTS:
            self.query, self.results_number = argument
            page = storefront.results_page(self.query, self.results_number)
        elif effect == BACK_TO_RESULTS:
            page = storefront.results_page(self.query, self.results_number)
        elif effect == TO_ITEM:
            self.item = argument
            self.selection = (None,) * len(storefront.catalogue[argument].options)
            page = storefront.item_page(self.item, self.selection)
        elif effect == SELECT_OPTION:
            position, value = argument
            self.selection = self.selection[:position] + (value,) + self.selection[position + 1 :]
            page = storefront.item_page(self.item, self.selection)
        else:
            assert effect == TO_SEARCH
            page = self._search_page
        self.done = self.steps >= self.horizon
        return StepResult(self._show(page), 0.0, self.done, False, False)

    def expert_action(self) -> str:
        return expert_action(self)

    def _show(self, page: Page) -> Observation:
        self.page = page
        self.observation = Observation(page.text, page.text, self.goal.instruction, page.admissible)
        return self.observation
