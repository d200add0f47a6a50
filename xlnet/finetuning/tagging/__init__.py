"""Token tagging (NER, POS, chunking): run_ner.py's task (docs/tagging.md).
Its settings, layouts and schemes import no TensorFlow."""
