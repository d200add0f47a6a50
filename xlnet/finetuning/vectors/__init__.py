"""Texts -> vectors from a checkpoint: extract_features.py (docs/features.md)."""
