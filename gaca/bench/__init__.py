"""Benchmarks that print tables (`gaca bench NAME`); speed is measured here, never asserted in tests."""
