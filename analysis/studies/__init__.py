"""One-off analyses over a store, each run by hand (``python -m analysis.studies.NAME``)."""
