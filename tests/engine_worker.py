"""One worker of a multi-worker engine run, for the tests (not a test).

  python tests/engine_worker.py --worker_hosts=127.0.0.1:P0,127.0.0.1:P1 \
      --task_index=I --model_dir=DIR --steps=N --save_steps=K \
      --weights=init.npz --out=result.npz [--bi_data] [--hold_after=S] \
      [--chief]

Worker h trains the tiny pretraining model on rows [2h, 2h+1] of each of a
fixed list of 4-row host batches (a seeded NumPy draw), resuming from DIR
like train_gpu.py, and saves its final model state and its replica's
memories to --out.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from tests import train_fixtures as fx  # noqa: E402
from xlnet.training import checkpoint_io  # noqa: E402
from xlnet.training import checkpoint_resume  # noqa: E402
from xlnet.training import strategies  # noqa: E402

NUM_BATCHES = 4


def host_batches():
  """The global 4-row batches; with bi_data rows 2h are forward and 2h+1
  backward rows of host h."""
  rng = np.random.RandomState(11)
  return [fx.fake_batch(rng, 4, 8, 3, 40) for _ in range(NUM_BATCHES)]


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--worker_hosts")
  parser.add_argument("--task_index", type=int)
  parser.add_argument("--model_dir")
  parser.add_argument("--steps", type=int)
  parser.add_argument("--save_steps", type=int, default=None)
  parser.add_argument("--weights")
  parser.add_argument("--out")
  parser.add_argument("--bi_data", action="store_true")
  parser.add_argument("--chief", action="store_true",
                      help="TF_CONFIG names a 'chief' (process 0) and a "
                      "'worker' task (process 1) instead of two workers")
  parser.add_argument("--hold_after", type=int, default=None,
                      help="stop training after this step and wait to be "
                      "killed")
  args = parser.parse_args()

  if args.chief:
    hosts = args.worker_hosts.split(",")
    os.environ["TF_CONFIG"] = json.dumps({
        "cluster": {"chief": hosts[:1], "worker": hosts[1:]},
        "task": {"type": "chief" if args.task_index == 0 else "worker",
                 "index": max(0, args.task_index - 1)}})
    strategy = strategies.create_strategy(1)
  else:
    strategy = strategies.create_strategy(1, args.worker_hosts, args.task_index)
  FL = fx.tiny_flags(bi_data=args.bi_data, learning_rate=3e-3,
                     train_batch_size=4)
  trainer = fx.make_trainer(FL, None, args.model_dir, strategy=strategy)
  host = args.task_index
  rows = [fx.take_rows(b, [2 * host, 2 * host + 1])
          for b in host_batches()]
  resume = checkpoint_resume.find_resume_checkpoint(args.model_dir)
  start = checkpoint_io.step_of(resume) if resume else 0
  trainer.build(fx.batches_dataset(rows[:1]).element_spec)
  if resume:
    trainer.restore(resume)
  else:
    weights = np.load(args.weights)
    trainer.state.load_values({k: weights[k] for k in weights.files})
  dataset = trainer.distribute(
      lambda ctx: fx.batches_dataset(rows).skip(start))
  if args.hold_after:
    trainer.train(dataset, args.hold_after, save_steps=args.save_steps)
    time.sleep(600)
  trainer.train(dataset, args.steps, save_steps=args.save_steps)
  np.savez(args.out, **trainer.state.values(),
           **{f"mem_{i}": m for i, m in enumerate(
               trainer.state.replica_memories()[trainer.local_replica_ids[0]])},
           replica=np.int64(trainer.local_replica_ids[0]))


if __name__ == "__main__":
  main()
