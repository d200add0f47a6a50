"""Activation recomputation (--recompute) and frozen layers (--freeze_layers):
the peak memory and the time of a training step with each, against the
step without.

Each variant runs in a process of its own and builds the engine's
`Trainer` (xlnet/training/trainer.py) on a wide model (by default 4
layers of width 1024, 16 heads of 64, d_inner 4096, 32,000 pieces: XLNet-
Large's layers) at 512 tokens, with one of two losses:
  classifier   the classification head on the content stream
               (run_classifier.py's step), --batch sequences;
  pretraining  two-stream pretraining with bi_data, memories of 384 and 85
               targets at 512 tokens (train_gpu.py's step), --batch
               sequences.
It runs one step (tracing; the memories fill), then resets the allocator's
statistics and runs --steps more. Printed per variant:
  peak     the allocator's peak during those steps (weights, Adam slots,
           memories and the step's tensors: what a GPU must hold), MiB;
  held     what stays allocated between steps (weights, slots, memories);
  step     the peak less what is held: the step's own tensors;
  maxrss   the process's resident peak (ru_maxrss, the first step's
           tracing and TensorFlow itself included), MiB;
  seconds  the median wall-clock time of a step;
  cpu      the median CPU time of a step (the process's user and system
           seconds: on a machine shared with other jobs it counts the
           step's work where the wall clock counts the others' too);
  price    that CPU time over the plain variant's (the same task, this
           run): the time recomputation or freezing costs or saves.
On the CPU the allocator is TensorFlow's BFC allocator, which importing
`xlnet` turns on, reserved first as one region of --pool_gib as a GPU's
(bench/finetune_memory.py says why); with a GPU visible the peak is
GPU:0's.

Usage (from the repository root; each TensorFlow):
  .venvs/reference/bin/python bench/recompute.py
  .venvs/latest/bin/python bench/recompute.py --tasks=classifier --n_layer=6
  python bench/recompute.py --freeze_layers=2     # also recompute + freeze
The figures measured: docs/training.md, sections 8 and 9.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

MIB = 2.0 ** 20
TASKS = ("classifier", "pretraining")
# Pretraining's memory and targets (the paper's recipe at 512 tokens).
MEM_LEN, NUM_PREDICT = 384, 85


def variants(freeze_layers):
  """(label, recompute, freeze_layers) of every variant measured."""
  out = [("plain", False, 0), ("recompute", True, 0)]
  if freeze_layers:
    out += [(f"freeze {freeze_layers}", False, freeze_layers),
            (f"recompute, freeze {freeze_layers}", True, freeze_layers)]
  return out


def pretraining_features(rng, seq_len, bsz, n_token):
  """One batch-major pretraining batch: NUM_PREDICT random targets per
  row (1 in 6 at other lengths), whose content no position sees, and two
  segments."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  num_predict = NUM_PREDICT if seq_len == 512 else seq_len // 6
  ids = rng.randint(0, n_token, (bsz, seq_len)).astype(np.int32)
  targets = np.sort(np.stack([rng.choice(seq_len, num_predict, replace=False)
                              for _ in range(bsz)]), axis=1)
  is_target = np.zeros((bsz, seq_len), np.float32)
  np.put_along_axis(is_target, targets, 1.0, axis=1)
  mapping = np.zeros((bsz, num_predict, seq_len), np.float32)
  mapping[np.arange(bsz)[:, None], np.arange(num_predict), targets] = 1.0
  return dict(
      input_k=ids, input_q=is_target,
      seg_id=(np.arange(seq_len) >= seq_len // 2).astype(np.int32)[None]
      .repeat(bsz, 0),
      perm_mask=is_target[:, None, :].repeat(seq_len, 1),
      target_mapping=mapping, target=np.take_along_axis(ids, targets, 1),
      target_mask=np.ones((bsz, num_predict), np.float32))


def build(args, recompute, freeze_layers):
  """(trainer, its dataset) of the measured step."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf
  from xlnet import model as model_lib
  from xlnet import pretraining_loss
  from xlnet.training import config
  from xlnet.training import trainer as trainer_lib

  xlnet_config = model_lib.XLNetConfig(
      n_layer=args.n_layer, d_model=args.d_model, n_head=args.d_model // 64,
      d_head=64, d_inner=4 * args.d_model, ff_activation="gelu",
      untie_r=True, n_token=args.n_token)
  rng = np.random.RandomState(0)
  optimizer = config.OptimizerConfig(
      learning_rate=1e-5, train_steps=10 ** 6, adam_epsilon=1e-6,
      n_layer=args.n_layer, freeze_layers=freeze_layers)
  train = config.TrainConfig(seed=1)
  unused_dir = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                            "unused-recompute-bench-model-dir")
  if args.task == "pretraining":
    run = model_lib.RunConfig(
        is_training=True, use_tpu=False, use_bfloat16=False, dropout=0.1,
        dropatt=0.1, mem_len=MEM_LEN, reuse_len=args.seq_len // 2,
        bi_data=True, recompute=recompute)
    batch = pretraining_features(rng, args.seq_len, args.batch, args.n_token)
    trainer = trainer_lib.Trainer(
        tf.distribute.get_strategy(),
        pretraining_loss.pretrain_loss_fn(xlnet_config, run), optimizer,
        unused_dir, memory=trainer_lib.MemoryConfig(
            args.n_layer, MEM_LEN, args.batch, args.d_model), train=train)
  else:
    from bench import finetune_step  # pylint: disable=g-import-not-at-top
    from xlnet.finetuning import config as finetune_config
    model = finetune_config.ModelConfig(
        xlnet_config=xlnet_config,
        run=model_lib.RunConfig(is_training=True, use_tpu=False,
                                use_bfloat16=False, dropout=0.1,
                                dropatt=0.1, recompute=recompute))
    batch = finetune_step.features("cls", args.batch, args.seq_len, rng,
                                   args.n_token)
    del batch["is_real_example"]
    loss_fn, _ = finetune_step.heads("cls", model)
    trainer = trainer_lib.Trainer(
        tf.distribute.get_strategy(), lambda f, m, t: (loss_fn(f, t), None,
                                                        {}),
        optimizer, unused_dir, train=train)
  return trainer, tf.data.Dataset.from_tensors(batch).repeat()


def measure(args, recompute, freeze_layers):
  """The figures of one variant, in this process."""
  import xlnet  # noqa: F401  (the BFC CPU allocator, before any op)
  import tensorflow as tf

  device = "GPU:0" if tf.config.list_physical_devices("GPU") else "CPU:0"
  if device == "CPU:0" and args.pool_gib:
    pool = tf.raw_ops.Empty(shape=[args.pool_gib, 2 ** 28], dtype=tf.float32,
                            init=False)
    del pool
  trainer, dataset = build(args, recompute, freeze_layers)
  trainer.build(dataset.element_spec)
  step = trainer.make_train_step()
  iterator = iter(trainer.distribute(lambda _: dataset))
  step(iterator, False)
  tf.config.experimental.reset_memory_stats(device)
  held = tf.config.experimental.get_memory_info(device)["current"]
  seconds, cpu, losses = [], [], []
  for _ in range(args.steps):
    start, start_cpu = time.perf_counter(), _cpu_seconds()
    losses.append(float(step(iterator, False)["loss"]))
    seconds.append(time.perf_counter() - start)
    cpu.append(_cpu_seconds() - start_cpu)
  peak = tf.config.experimental.get_memory_info(device)["peak"]
  return dict(device=device, tf=tf.__version__, peak=peak / MIB,
              held=held / MIB, maxrss=resource.getrusage(
                  resource.RUSAGE_SELF).ru_maxrss / 1024,
              seconds=statistics.median(seconds),
              cpu=statistics.median(cpu), losses=losses)


def _cpu_seconds():
  """The user and system CPU seconds of this process so far."""
  usage = resource.getrusage(resource.RUSAGE_SELF)
  return usage.ru_utime + usage.ru_stime


def run_variant(args, recompute, freeze_layers):
  """`measure` in a child process; returns its dict."""
  cmd = [sys.executable, os.path.abspath(__file__), "--measure",
         json.dumps([recompute, freeze_layers])] + [
             f"--{k}={v}" for k, v in vars(args).items()
             if k not in ("measure", "tasks")]
  out = subprocess.run(cmd, capture_output=True, text=True, check=False)
  lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
  if out.returncode or not lines:
    raise SystemExit(f"recompute.py: error: {args.task} recompute="
                     f"{recompute} freeze_layers={freeze_layers} failed "
                     f"(exit {out.returncode}):\n{out.stderr[-2000:]}")
  return json.loads(lines[-1])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--tasks", default=",".join(TASKS))
  parser.add_argument("--n_layer", type=int, default=4)
  parser.add_argument("--d_model", type=int, default=1024)
  parser.add_argument("--n_token", type=int, default=32000)
  parser.add_argument("--seq_len", type=int, default=512)
  parser.add_argument("--batch", type=int, default=2,
                      help="Sequences per step (even: pretraining's "
                      "bi_data).")
  parser.add_argument("--steps", type=int, default=2,
                      help="Steps measured after the first.")
  parser.add_argument("--freeze_layers", type=int, default=0,
                      help="Also measure --freeze_layers=N, alone and with "
                      "--recompute.")
  parser.add_argument("--pool_gib", type=int, default=12,
                      help="On the CPU, the allocator's pool reserved first "
                      "as one region of this many GiB (0: it grows).")
  parser.add_argument("--task", default="classifier", help=argparse.SUPPRESS)
  parser.add_argument("--measure", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.measure:
    print(json.dumps(measure(args, *json.loads(args.measure))))
    return
  print(f"{args.n_layer} layers of width {args.d_model}, {args.seq_len} "
        f"tokens, {args.batch} sequences per step; MiB and seconds")
  print(f"{'task':12s} {'variant':22s} {'peak':>8s} {'held':>8s} "
        f"{'step':>8s} {'maxrss':>8s} {'seconds':>8s} {'cpu':>8s} "
        f"{'price':>6s}  loss")
  for task in args.tasks.split(","):
    args.task = task
    plain = None
    for label, recompute, freeze in variants(args.freeze_layers):
      r = run_variant(args, recompute, freeze)
      plain = plain or r
      print(f"{task:12s} {label:22s} {r['peak']:8.0f} {r['held']:8.0f} "
            f"{r['peak'] - r['held']:8.0f} {r['maxrss']:8.0f} "
            f"{r['seconds']:8.2f} {r['cpu']:8.2f} "
            f"{r['cpu'] / plain['cpu']:5.2f}x  "
            f"{r['losses'][-1]:.5f} ({r['device']}, TensorFlow {r['tf']})",
            flush=True)


if __name__ == "__main__":
  main()
