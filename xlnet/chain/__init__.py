"""The paper's chain in miniature (bench/chain.py, docs/chain.md): pretrain
a small XLNet with this code, fine-tune it and a random initialization of
the same model on labelled sets, compare over seeds."""
