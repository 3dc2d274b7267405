"""The paper-scale path: gaca's estimators in verl and verl-agent, split by the process the code runs in.

- ``launcher``: runs in gaca's process. A ``backend=verl`` run config checked (``checks``) and turned
  into one verl-agent training job (``job``, ``run_options``), the job's task files and exported
  starting policy written, the machine checked (``preflight``, ``checkout``), the job run and its
  metrics published under the tracking contract (``launch``, ``metrics``).
- ``agent``: runs inside verl's or verl-agent's trainer process (and its Ray workers). The
  ``verl.plugins`` entry point (``plugin``, ``registration``), the hooks installed in an unmodified
  verl-agent (``hooks``, started by ``python -m gaca.backends.verl.agent.main``), the step rows read
  from a verl batch (``batch``) and their advantages (``advantage``), the plugin's options
  (``options``), gaca's environments served to the trainer (``env_manager``), timing and the CPU
  patches (``timing``, ``cpu_patches``, ``cpu_site``).

The launcher imports the agent's names (environment variables, the hooks' output), never the other
way; nothing here imports verl at module level.
"""
