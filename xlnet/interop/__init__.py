"""Models that leave TensorFlow: the HuggingFace transformers format both
ways (`hf_export`, `hf_import`, one name table in `hf_names`) and a
SavedModel for serving (`saved_model`); the program is
`convert_checkpoint.py` (docs/interop.md)."""
