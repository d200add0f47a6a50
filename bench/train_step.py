"""Benchmark of the full pretraining step (forward, backward, Adam update).

For each config it reports steps/s and tokens/s (train_batch_size * seq_len
per step) of:
  pipeline  : records -> input function -> train step (what train_gpu.py runs)
  cached    : one batch cached in memory (input pipeline excluded)
  feed_mems : like `cached`, but the memories go through feed_dict and come
              back to Python every step (instead of staying in variables on
              the device)
Configs: `demo` (configs/xlnet_tiny.json, seq 128, batch 8, mem 64) and
`base` (XLNet-Base width: d_model 768, 12 heads, d_inner 3072, but 2 layers;
seq 512, reuse 256, mem 384, batch 4, 85 targets, vocab 32000).

  python bench/train_step.py [--configs=demo,base] [--steps=20] [--warmup=3]

Records are written once into --work_dir from the demo corpus (needs the
corpus, see scripts/get_demo_corpus.py).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from xlnet import data_utils  # noqa: E402
from xlnet import demo_corpus  # noqa: E402
from xlnet import flags as flags_lib  # noqa: E402
from xlnet import function_builder  # noqa: E402
from xlnet import model_utils  # noqa: E402
from xlnet import spm_train  # noqa: E402
from xlnet import train_gpu  # noqa: E402

flags.DEFINE_string("configs", "demo,base", "Comma-separated configs.")
flags.DEFINE_integer("steps", 20, "Timed steps per measurement.")
flags.DEFINE_integer("warmup", 3, "Untimed steps before timing.")
flags.DEFINE_string("work_dir", "/tmp/xlnet_bench_train_step",
                    "Where the SentencePiece model and records go.")
BENCH = flags.FLAGS

_COMMON = ["--dropout=0.1", "--dropatt=0.1", "--learning_rate=1e-4",
           "--warmup_steps=0", "--train_steps=100000", "--weight_decay=0.01"]
CONFIGS = {
    "demo": dict(
        data=dict(bsz_per_host=8, seq_len=128, reuse_len=64, num_predict=20),
        flags=["--model_config_path=configs/xlnet_tiny.json", "--mem_len=64",
               "--perm_size=32"], vocab=2000),
    "base": dict(
        data=dict(bsz_per_host=4, seq_len=512, reuse_len=256, num_predict=85),
        flags=["--n_layer=2", "--d_model=768", "--n_head=12", "--d_head=64",
               "--d_inner=3072", "--ff_activation=gelu", "--untie_r=True",
               "--n_token=32000", "--mem_len=384", "--perm_size=256"],
        vocab=2000),
}


def make_records(name, config):
  """Writes (once) the config's records from the demo corpus; their dir."""
  save_dir = os.path.join(BENCH.work_dir, name)
  record_dir = os.path.join(save_dir, "tfrecords")
  if data_utils.load_corpus_info(save_dir) is None:
    corpus = demo_corpus.get_demo_corpus()
    sp_path = os.path.join(BENCH.work_dir, "spiece.model")
    if not os.path.exists(sp_path):
      spm_train.train_spm(corpus, sp_path[:-len(".model")],
                          vocab_size=config["vocab"])
    data_utils.create_data(corpus, sp_path, save_dir, num_core_per_host=1,
                           bi_data=True, **config["data"])
  return record_dir


def bench_flags(record_dir, config):
  """Resolved trainer flags of one benchmark config."""
  FL = flags_lib.parse_flags(["bench", f"--record_info_dir={record_dir}"] +
                             _COMMON + config["flags"])
  flags_lib.model_config_to_flags(FL)
  flags_lib.resolve_flags(FL, flags_lib.load_corpus_info(FL))
  return FL


def time_steps(run_step):
  """Runs `run_step()` warmup + steps times; returns seconds per step."""
  for _ in range(BENCH.warmup):
    run_step()
  start = time.time()
  for _ in range(BENCH.steps):
    run_step()
  return (time.time() - start) / BENCH.steps


def measure(FL, mode):
  """Seconds per step of one mode ("pipeline", "cached" or "feed_mems")."""
  input_fn, _ = function_builder.get_input_fn(FL, FL.num_core_per_host)
  device = train_gpu.tower_devices(1)
  with tf.Graph().as_default():
    dataset = train_gpu.host_dataset(input_fn, 1, FL.train_batch_size, 0)
    if mode != "pipeline":
      dataset = dataset.take(1).cache().repeat()
    features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
    if mode == "feed_mems":
      mem_shape = [FL.mem_len, FL.train_batch_size, FL.d_model]
      mem_phs = [tf.compat.v1.placeholder(tf.float32, mem_shape)
                 for _ in range(FL.n_layer)]
      with tf.device(device[0]):
        loss, new_mems, _ = function_builder.get_loss(FL, features, None,
                                                      mem_phs, True)
        train_op, _, _ = model_utils.get_train_op(FL, loss)
      mems = [np.zeros(mem_shape, np.float32) for _ in range(FL.n_layer)]
    else:
      step = train_gpu.build_train_step(FL, features, device)
    with tf.compat.v1.Session(config=train_gpu.session_config(1)) as sess:
      sess.run(tf.compat.v1.global_variables_initializer())
      if mode == "feed_mems":
        def run_step():
          mems[:] = sess.run([train_op, new_mems],
                             dict(zip(mem_phs, mems)))[1]
      else:
        def run_step():
          sess.run(step.global_step)
      return time_steps(run_step)


def main(unused_argv):
  tf.compat.v1.disable_eager_execution()
  os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  print(f"TensorFlow {tf.__version__}, device {train_gpu.tower_devices(1)[0]}"
        f", {BENCH.steps} timed steps after {BENCH.warmup} warm-up steps")
  print(f"{'config':<6} {'mode':<10} {'steps/s':>9} {'tokens/s':>10}")
  for name in BENCH.configs.split(","):
    config = CONFIGS[name]
    FL = bench_flags(make_records(name, config), config)
    tokens = FL.train_batch_size * FL.seq_len
    results = {}
    for mode in ("pipeline", "cached", "feed_mems"):
      results[mode] = measure(FL, mode)
      print(f"{name:<6} {mode:<10} {1 / results[mode]:9.2f} "
            f"{tokens / results[mode]:10.0f}", flush=True)
    print(f"{name:<6} input pipeline costs "
          f"{100 * (results['pipeline'] / results['cached'] - 1):+.1f}% per "
          f"step; memories on device save "
          f"{100 * (1 - results['cached'] / results['feed_mems']):.1f}% per "
          "step vs feed_dict", flush=True)


if __name__ == "__main__":
  app.run(main)
