"""From the MLflow store to table cells: reading runs, filtering them, labelling blocks, filling cells."""
