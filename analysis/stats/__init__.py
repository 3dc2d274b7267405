"""Statistics on plain arrays: no runs, no cells, no MLflow (levels, tests, intervals, designs)."""
