"""gaca's estimators inside verl: a ``verl.plugins`` plugin and an adapter for verl-agent.

- verl 0.9.1 (legacy trainer, ``trainer.use_v1=false``): installing gaca makes
  ``algorithm.adv_estimator=gaca|gigpo|gaca_grpo`` work, options under ``+algorithm.gaca.*``.
- verl-agent's own trainer, unmodified: ``python -m gaca.backends.verl.agent_main`` installs the hooks of
  ``gaca.backends.verl.agent_hooks`` (no critic, ``add_step_index`` after the rollout,
  ``compute_batch_advantages`` from its ``compute_advantage``) and runs its ``main_ppo``;
  ``gaca verl-agent check PATH`` checks a checkout.

Nothing here imports verl; the batch layout is documented in ``gaca.backends.verl.batch``.
"""

from gaca.backends.verl.advantage import DIAGNOSTICS_KEY, compute_batch_advantages, token_level_advantages
from gaca.backends.verl.batch import add_step_index
from gaca.backends.verl.options import ESTIMATOR_METHODS, plugin_options
from gaca.backends.verl.registration import install_batch_hook, register_estimators

__all__ = [
    "DIAGNOSTICS_KEY",
    "ESTIMATOR_METHODS",
    "add_step_index",
    "compute_batch_advantages",
    "install_batch_hook",
    "plugin_options",
    "register_estimators",
    "token_level_advantages",
]
