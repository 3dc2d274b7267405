"""``backend=cpu``: gaca's own group-rollout PPO trainer, in one process on CPU threads.

``loop`` holds the algorithm (``iteration``: rollout -> advantages -> update) and the scaffolding
around it (``train``); ``start`` makes the starting policy (the behaviour clone and its prior
stage), ``seeds`` the random streams both draw from; ``rollout`` collects group episodes, ``ppo``
and ``losses`` update the policy, ``checkpoint`` saves and verifies what a resumed run reloads,
``signal`` measures where a batch's learning signal is, ``progress`` prints the job log's
iteration lines and ``garbage_collector`` tunes Python's collector for a run.
"""
