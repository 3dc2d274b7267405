"""Code that runs in gaca's process for a ``backend=verl`` run: checks, the job, its files, its launch."""
