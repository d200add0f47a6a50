"""The demo: a small corpus, its report and predictions."""
