"""Benchmark of fine-tuning: training and evaluation examples/s.

Runs the fine-tuning engine (`xlnet/finetuning/finetune.py`'s trainer and predictor)
with the classification head at sequence lengths 128 and 512 and with the
SQuAD heads at 512, on synthetic features, at XLNet-Base width (d_model 768,
12 heads, d_inner 3072; `--n_layer` layers, 12 in XLNet-Base, fewer for a
quick CPU figure). Prints the steady training and evaluation examples/s.

  python bench/finetune_step.py [--n_layer=2] [--steps=4] [--bsz=4]
      [--tasks=cls128,cls512,squad512] [--use_xla]
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bench import scratch  # noqa: E402
from xlnet import model as model_lib  # noqa: E402
from xlnet.finetuning import config as finetune_config  # noqa: E402
from xlnet.finetuning.classifier import head as classifier_head  # noqa: E402
from xlnet.finetuning.race import task as race_task  # noqa: E402
from xlnet.finetuning.squad import head as squad_head  # noqa: E402
from xlnet.finetuning.squad import task as squad_task  # noqa: E402
from xlnet.training import config  # noqa: E402
from xlnet.training import predictor as predictor_lib  # noqa: E402
from xlnet.training import trainer as trainer_lib  # noqa: E402


def model_config(config_path):
  """The backbone the heads are built on (release defaults)."""
  return finetune_config.ModelConfig(
      xlnet_config=model_lib.XLNetConfig(json_path=config_path))


def features(task, bsz, seq_len, rng, n_token=32000):
  """One synthetic batch of the task's features (numpy): "cls", "squad" or
  "race" (a RACE example is its 4 options of seq_len side by side)."""
  width = seq_len * (4 if task == "race" else 1)
  out = {"input_ids": rng.randint(9, n_token, (bsz, width)).astype(np.int32),
         "segment_ids": np.zeros((bsz, width), np.int32),
         "input_mask": np.zeros((bsz, width), np.float32)}
  if task == "race":
    out.update(label_ids=rng.randint(0, 4, bsz).astype(np.int32))
  elif task == "cls":
    out.update(label_ids=rng.randint(0, 2, bsz).astype(np.int32),
               is_real_example=np.ones(bsz, np.int32))
  else:
    out.update(p_mask=np.zeros((bsz, seq_len), np.float32),
               cls_index=np.full(bsz, seq_len - 1, np.int32),
               start_positions=rng.randint(0, seq_len // 2, bsz).astype(
                   np.int32),
               end_positions=rng.randint(seq_len // 2, seq_len - 1,
                                         bsz).astype(np.int32),
               is_impossible=np.zeros(bsz, np.float32),
               unique_ids=np.arange(bsz, dtype=np.int32))
  return out


def heads(task, model):
  """(loss_fn(features, is_training), outputs_fn(features)) of the task on
  `model` (a ModelConfig). SQuAD and RACE train the programs' losses
  (`squad_task.loss_fn`, `race_task.loss_fn`), whose graph is the training
  one whatever is_training says (the SQuAD end head needs the gold start)."""
  xlnet_config = model.xlnet_config
  if task == "cls":
    return (lambda f, t: classifier_head.get_classification_loss(
        xlnet_config, model.run_config(t), f, 2, "classification_bench")[0],
            lambda f: {"logits": classifier_head.get_classification_loss(
                xlnet_config, model.run_config(False), f, 2,
                "classification_bench")[2]})
  if task == "race":
    return (race_task.loss_fn(model),
            lambda f: race_task.outputs_fn(model)(f, False))
  return (squad_task.loss_fn(model),
          lambda f: squad_head.get_qa_predictions(
              xlnet_config, model.run_config(False), f))


def bench(name, args, config_path, model_dir):
  """Steady training and eval examples/s of one task at one length."""
  task, seq_len = name[:-3], int(name[-3:])
  batch = features(task, args.bsz, seq_len, np.random.RandomState(0))
  dataset = tf.data.Dataset.from_tensors(batch).repeat()
  loss_fn, outputs_fn = heads(task, model_config(config_path))
  strategy = tf.distribute.get_strategy()
  trainer = trainer_lib.Trainer(
      strategy, lambda f, m, t: (loss_fn(f, t), None, {}),
      config.OptimizerConfig(learning_rate=2e-5, train_steps=10 ** 6,
                             adam_epsilon=1e-6),
      os.path.join(model_dir, name),
      train=config.TrainConfig(seed=1, use_xla=args.use_xla))
  trainer.build(dataset.element_spec)
  step = trainer.make_train_step()
  iterator = iter(trainer.distribute(lambda _: dataset))
  step(iterator, False)  # trace and compile
  start = time.time()
  for _ in range(args.steps):
    step(iterator, False)
  train_rate = args.steps * args.bsz / (time.time() - start)

  predictor = predictor_lib.Predictor(strategy, outputs_fn)
  prefix = trainer.save(0)
  predictor.restore(prefix, dataset.element_spec)
  eval_set = dataset.take(1)
  predictor.predict(eval_set, args.bsz)  # trace
  eval_set = dataset.take(args.steps)
  start = time.time()
  predictor.predict(eval_set, args.bsz)
  eval_rate = args.steps * args.bsz / (time.time() - start)
  return train_rate, eval_rate


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--n_layer", type=int, default=2)
  parser.add_argument("--steps", type=int, default=4)
  parser.add_argument("--bsz", type=int, default=4)
  parser.add_argument("--tasks", default="cls128,cls512,squad512")
  parser.add_argument("--use_xla", action="store_true")
  args = parser.parse_args()
  work = scratch.scratch_dir(None, "xlnet-bench-finetune-")
  config_path = os.path.join(work, "config.json")
  with open(config_path, "w") as f:
    json.dump(dict(n_layer=args.n_layer, d_model=768, n_head=12, d_head=64,
                   d_inner=3072, ff_activation="gelu", untie_r=True,
                   n_token=32000), f)
  print(f"base width, {args.n_layer} layers, batch {args.bsz}, "
        f"{args.steps} timed steps{', XLA' if args.use_xla else ''}:")
  for name in args.tasks.split(","):
    train_rate, eval_rate = bench(name, args, config_path, work)
    print(f"  {name:9s} train {train_rate:7.2f} examples/s   "
          f"eval {eval_rate:7.2f} examples/s")


if __name__ == "__main__":
  main()
