"""Pretraining data: text -> SentencePiece -> records -> the input function."""
