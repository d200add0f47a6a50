"""Both kinds of pretraining records of one text, for the benchmarks that
compare them (bench/online_sampler.py, bench/input_vs_step.py). No flags:
each benchmark defines its own."""
import os

from xlnet.data import record_writer

KINDS = ("examples", "tokens")


def write_both(work_dir, corpus, sp_path, settings):
  """Example records and token records of `corpus` with the same settings.

  Args:
    work_dir: gets one save_dir per kind, `{work_dir}/{kind}`.
    corpus: text file(s), a `create_data` input glob.
    sp_path: SentencePiece model.
    settings: `create_data` record settings (bsz_per_host, seq_len, ...).

  Returns:
    {kind: its tfrecords dir}, in KINDS order.
  """
  dirs = {}
  for kind in KINDS:
    save_dir = os.path.join(work_dir, kind)
    record_writer.create_data(corpus, sp_path, save_dir, num_workers=1,
                              record_kind=kind, **settings)
    dirs[kind] = os.path.join(save_dir, "tfrecords")
  return dirs
