"""Headless evaluation: edit traces, their replay and metrics, comparisons, the HTML report,
the held-out sets and Ray. The language server never imports this package."""
