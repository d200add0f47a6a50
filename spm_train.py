"""Trains an XLNet SentencePiece model with the release's options:
`python spm_train.py --input=FILES --model_prefix=PREFIX --vocab_size=N`
(see `xlnet/data/spm_train.py` and `--helpfull`).
"""
from xlnet.data import spm_train

if __name__ == "__main__":
  spm_train.entry_point()
