"""Benchmark of the pretraining program's step on each device layout.

Runs the real `train_gpu.py` (records -> input function -> engine step ->
update) for each variant on the same global batch and prints the steady
tokens/s of the last log interval (the first interval, which holds tracing
and compilation, is left out):

  one          one process, one device
  two_devices  one process, two replicas (GPUs, or logical CPU devices)
  two_workers  two processes over loopback (MultiWorkerMirroredStrategy),
               one replica each, each reading its own record file
  accum2       one device, --accum_steps=2 (twice the rows per optimizer
               step; tokens/s counts every micro-batch)
  xla          one device, --use_xla

  python bench/train_step.py [--config=tiny|base] [--interval=5]
      [--variants=one,two_devices,two_workers,accum2,xla]

`tiny` is configs/xlnet_tiny.json with seq 128, batch 8, mem 64; `base` is
XLNet-Base width (d_model 768, 12 heads, d_inner 3072) with 2 layers, seq
512, reuse 256, mem 384, batch 4, 85 targets. Records come from the demo
corpus (fetched on first use) and are written once into --work_dir.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench import scratch  # noqa: E402

CONFIGS = {
    "tiny": dict(data=dict(seq_len=128, reuse_len=64, num_predict=20, bsz=8),
                 flags=["--model_config_path=configs/xlnet_tiny.json",
                        "--mem_len=64", "--perm_size=32"], vocab=2000),
    "base": dict(data=dict(seq_len=512, reuse_len=256, num_predict=85, bsz=4),
                 flags=["--n_layer=2", "--d_model=768", "--n_head=12",
                        "--d_head=64", "--d_inner=3072",
                        "--ff_activation=gelu", "--untie_r=True",
                        "--n_token=32000", "--mem_len=384", "--perm_size=256"],
                 vocab=2000),
}
COMMON = ["--dropout=0.1", "--dropatt=0.1", "--learning_rate=1e-4",
          "--warmup_steps=0", "--weight_decay=0.01", "--train_steps=1000000",
          "--seed=1"]


def write_records(work_dir, config, bsz_per_host, num_task):
  """Records of the demo corpus for `num_task` hosts; returns the dir."""
  from xlnet.demo import demo_corpus  # pylint: disable=g-import-not-at-top
  from xlnet.data import spm_train  # pylint: disable=g-import-not-at-top
  from xlnet.data import record_writer  # pylint: disable=g-import-not-at-top
  save_dir = os.path.join(work_dir, f"data-{bsz_per_host}x{num_task}")
  record_dir = os.path.join(save_dir, "tfrecords")
  if os.path.exists(os.path.join(save_dir, "corpus_info.json")):
    return record_dir
  corpus = demo_corpus.get_demo_corpus(os.path.join(ROOT, "data", "demo"))
  prefix = os.path.join(work_dir, "spiece")
  if not os.path.exists(prefix + ".model"):
    spm_train.train_spm(corpus, prefix, config["vocab"])
  # Two tasks need two input files: split the corpus in halves.
  lines = open(corpus, encoding="utf-8").read().split("\n")
  inputs = []
  for task in range(num_task):
    path = os.path.join(work_dir, f"corpus-{task}-of-{num_task}.txt")
    with open(path, "w", encoding="utf-8") as f:
      f.write("\n".join(lines[task::num_task]) + "\n")
    inputs.append(path)
  data = config["data"]
  for task in range(num_task):
    record_writer.create_data(
        ",".join(inputs), prefix + ".model", save_dir,
        bsz_per_host=bsz_per_host, num_core_per_host=1, seq_len=data["seq_len"],
        reuse_len=data["reuse_len"], bi_data=True, mask_alpha=6, mask_beta=1,
        num_predict=data["num_predict"], num_task=num_task, task=task)
  return record_dir


def free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def steady_tokens_per_s(log):
  """tokens/s of the last log line (the steady interval)."""
  rates = re.findall(r"\| ([0-9.]+) tokens/s", log)
  if len(rates) < 2:
    raise RuntimeError("no steady log interval in:\n" + log[-3000:])
  return float(rates[-1])


def run_variant(name, config, records, work_dir, interval, python):
  """Runs one variant; returns tokens/s of the steady interval."""
  model_dir = os.path.join(work_dir, f"model-{name}-{time.time_ns()}")
  base = [python, "train_gpu.py", *config["flags"], *COMMON,
          f"--iterations={interval}", f"--train_steps={3 * interval}"]
  extra = {"one": [], "two_devices": ["--num_core_per_host=2"],
           "accum2": ["--accum_steps=2"], "xla": ["--use_xla"]}
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  if name != "two_workers":
    proc = subprocess.run(
        base + [f"--record_info_dir={records['one']}",
                f"--model_dir={model_dir}"] + extra[name],
        capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    if proc.returncode:
      raise RuntimeError(proc.stderr[-3000:])
    return steady_tokens_per_s(proc.stderr)
  hosts = f"127.0.0.1:{free_port()},127.0.0.1:{free_port()}"
  procs = [subprocess.Popen(
      base + [f"--record_info_dir={records['two']}",
              f"--model_dir={model_dir}", f"--worker_hosts={hosts}",
              f"--task_index={i}"], stdout=subprocess.DEVNULL,
      stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
           for i in range(2)]
  logs = [p.communicate()[1] for p in procs]
  if any(p.returncode for p in procs):
    raise RuntimeError(logs[0][-3000:])
  return steady_tokens_per_s(logs[0])  # the chief logs the global rate


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--config", default="tiny", choices=sorted(CONFIGS))
  parser.add_argument("--interval", type=int, default=20,
                      help="steps per log interval (3 intervals per run)")
  parser.add_argument("--variants",
                      default="one,two_devices,two_workers,accum2,xla")
  parser.add_argument("--work_dir", default=None,
                      help="scratch dir, kept (default: a temp dir, removed "
                      "at exit)")
  parser.add_argument("--python", default=sys.executable)
  args = parser.parse_args()
  config = CONFIGS[args.config]
  args.work_dir = scratch.scratch_dir(args.work_dir, "xlnet-bench-train-")
  bsz = config["data"]["bsz"]
  records = {"one": write_records(args.work_dir, config, bsz, 1),
             "two": write_records(args.work_dir, config, bsz // 2, 2)}
  print(f"config {args.config}: global batch {bsz} x seq "
        f"{config['data']['seq_len']}, {args.interval}-step intervals")
  for name in args.variants.split(","):
    rate = run_variant(name, config, records, args.work_dir, args.interval,
                       args.python)
    print(f"  {name:12s} {rate:10.0f} tokens/s")


if __name__ == "__main__":
  main()
