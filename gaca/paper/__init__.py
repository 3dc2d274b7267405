"""Paper-scale runs (``backend=verl``): a run config as a verl-agent training job on GPUs, and the job
wrapper that ties that job to the project's MLflow tracking contract."""
