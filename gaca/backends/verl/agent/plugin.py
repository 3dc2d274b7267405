"""verl's ``verl.plugins`` entry point: ``import verl`` imports this module.

It imports nothing from verl now; when verl's trainer modules are imported it registers the
``gaca``, ``gigpo`` and ``gaca_grpo`` advantage estimators and installs the batch hook.
verl swallows a plugin's import errors (logged at DEBUG), so this module does as little as possible.
"""

from gaca.backends.verl.agent.imports import when_imported
from gaca.backends.verl.agent.registration import install_batch_hook, register_estimators

when_imported("verl.trainer.ppo.core_algos", register_estimators)
when_imported("verl.trainer.ppo.ray_trainer", install_batch_hook)
