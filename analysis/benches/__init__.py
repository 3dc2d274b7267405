"""Simulation benchmarks of the statistics and the report, and the synthetic runs they log."""
