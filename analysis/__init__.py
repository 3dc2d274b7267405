"""The paper's tables, figures and claims check, generated from the runs logged in MLflow.

Packages, in the order data flows through them (each imports only those above it):

- ``stats``: pure statistics on numbers, no runs or cells: ``basic`` (mean/std over seeds, t
  intervals floored by the task level, power, probability of improvement), ``betting`` (tests of a
  bounded mean valid for any shape), ``signflip`` (exact sign-flip tests), ``comparison`` (a paired
  or unpaired difference with its interval), ``sequential`` (the verdicts' test and the design that
  runs seeds in rounds).
- ``runs``: from the store to cells: ``collect`` (MLflow -> tidy frames), ``where`` (``--where``
  filters), ``blocks`` (the blocks of ``sweeps/`` as the report shows them), ``cells`` (which runs
  fill which cell, and the selected scores).
- ``claims``: the paper's claims decided on the cells: ``checks`` (each claim's verdict), ``replay``
  (the sequential design replayed on a block), ``text`` (claims.md and its LaTeX table).
- ``render``: ``tables``, ``figures``, ``latex`` (report.tex, latexmk), ``horizon`` (the horizon
  block's table and figure).
- ``report``: the ``gaca report`` command, on top of the four above.
- ``studies``: one-off analyses run by hand (``python -m analysis.studies.NAME``): two backends side
  by side, learning curves, sensitivity, stability, the testbed's verdicts.
- ``benches``: simulation benchmarks and synthetic stores: ``worlds`` (simulated seed outcomes),
  ``candidates`` and ``sequential`` (docs/sequential.md's tables), ``verdicts`` (``gaca bench
  verdicts``), ``synthetic`` (runs logged with known values) and ``report`` (the report's timing).
- ``data``: small shipped files (logged finals the benches resample).
"""
