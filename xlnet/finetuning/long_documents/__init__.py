"""Texts longer than one sequence: windows, memory (docs/long_documents.md)."""
