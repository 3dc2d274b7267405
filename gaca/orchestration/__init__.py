"""Sweeps, status and searches: dispatching many runs through Hydra and submitit, locally or on SLURM."""
