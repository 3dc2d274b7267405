"""What the report shows: LaTeX tables, matplotlib figures, report.tex and its compilation."""
