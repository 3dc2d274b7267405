"""The paper's tables, figures and claims check, generated from the runs logged in MLflow.

Modules, in the order data flows through them:

- ``blocks``: the blocks of ``sweeps/`` as the report shows them (the grid is the sweep files'; rows
  labelled and ordered here); which configurations form each table cell (``gaca.contract.canonical``).
- ``collect``: MLflow -> tidy pandas frames (runs, metric curves, per-task evaluation outcomes).
- ``cells``: which runs fill which cell (status, duplicates, other configurations, seeds) and the selected scores.
- ``stats``: small pure functions (mean/std over seeds, t intervals floored by the task level,
  power, probability of improvement).
- ``betting``: one-sided tests of a bounded mean by betting (valid at every seed count for any
  outcome shape); ``sequential``: the verdicts' test and the design that runs seeds in rounds;
  ``sequential_sim``: the simulated worlds it is checked on (mixtures and this testbed's logged
  finals, ``data/testbed_finals.csv``); ``sequential_candidates``: the tests compared with it;
  ``sequential_claims``: the design replayed on a block's claims; ``sequential_bench``: every table
  of docs/sequential.md (``python -m analysis.sequential_bench``).
- ``tables``, ``figures``, ``claims``: the paper's artifacts from the cell results.
- ``latex``: ``report.tex`` and its compilation with latexmk.
- ``report``: the ``gaca report`` command.
- ``synthetic``: runs logged with known values through the tracking contract (tests, benchmark);
  ``bench``: the report's timing on a synthetic 500-run store (``python -m analysis.report_bench``).
"""
