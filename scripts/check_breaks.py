#!/usr/bin/env python3
"""Breaks the code on purpose and shows that the tests catch each break.

  python scripts/check_breaks.py             every break (about 15 min)
  python scripts/check_breaks.py mask lock   the named ones

Each break below replaces one exact piece of `xlnet/` (it must occur once),
runs the tests that should catch it, and puts the file back (always, also
after Ctrl-C). Two runs per break, in the environments `scripts/test.sh`
built (`reference`; `interop` for the converter's tests):
- "suite": the named test files, as the full suite runs them;
- "quick": the quick tier (`-m quick` over tests/), for the breaks of the
  core that it must catch too.
A break is caught when pytest fails. The table it prints is the one in
docs/testing.md. Run it on a clean checkout: it refuses to touch a file
with uncommitted changes.
"""
import argparse
import dataclasses
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class Break:
  name: str
  what: str
  path: str
  old: str
  new: str
  tests: tuple
  quick: bool


BREAKS = (
    Break("mask", "the content stream no longer sees its own position",
          "xlnet/modeling.py",
          "non_tgt_mask = tf.cast(attn_mask - self_visible > 0, dtype)",
          "non_tgt_mask = attn_mask",
          ("tests/core/test_modeling.py",), True),
    Break("rel_shift", "rel_shift drops the last row instead of the first "
          "(every relative distance off by one)", "xlnet/modeling.py",
          "x = tf.slice(x, [0, 0, 1, 0], [-1, -1, -1, -1])",
          "x = tf.slice(x, [0, 0, 0, 0], [-1, -1, x_size[3] - 1, -1])",
          ("tests/core/test_relative_positions.py",), True),
    Break("memory", "the memory carries gradients into the previous "
          "segment", "xlnet/modeling.py",
          "return tf.stop_gradient(new_mem) if stop_gradient else new_mem",
          "return new_mem",
          ("tests/core/test_modeling.py",), False),
    Break("perm_mask", "a target may see itself in the factorization order",
          "xlnet/data/perm_features.py",
          "self_rev_index = tf.where(target_tokens, rev_index, rev_index + 1)",
          "self_rev_index = tf.where(target_tokens, rev_index + 1, "
          "rev_index + 1)",
          ("tests/data/test_local_permutation.py",), True),
    Break("resume", "a resumed stream of token records starts one batch "
          "late", "xlnet/data/online_examples.py",
          "batches = batches.skip(start_batch % epoch).enumerate(",
          "batches = batches.skip(start_batch % epoch + 1).enumerate(",
          ("tests/data/test_token_records.py",
           "tests/pretraining/test_train_gpu.py"), True),
    Break("online_sampler", "online span masks stop one piece short",
          "xlnet/data/online_examples.py",
          "mask |= (pos >= beg[:, None]) & (pos < (beg + n)[:, None])",
          "mask |= (pos >= beg[:, None]) & (pos < (beg + n - 1)[:, None])",
          ("tests/data/test_online_examples.py",), True),
    Break("lock", "a live trainer's lock looks stale (its pid 'gone')",
          "xlnet/training/run_lock.py",
          "  except (PermissionError, OverflowError):\n    return True\n"
          "  return True",
          "  except (PermissionError, OverflowError):\n    return True\n"
          "  return False",
          ("tests/training/test_run_lock.py",), True),
    Break("signal", "a SIGTERM between steps stops without saving",
          "xlnet/training/trainer.py",
          "          if out[\"stop\"]:\n            if saved != step:\n"
          "              self.save(step, max_save)",
          "          if out[\"stop\"]:\n            if False:\n"
          "              self.save(step, max_save)",
          ("tests/pretraining/test_train_gpu.py",
           "tests/training/test_trainer.py"), False),
    Break("head", "the classification head pools the first position, not "
          "<cls> (the last)", "xlnet/modeling.py",
          "summary = hidden[-1]", "summary = hidden[0]",
          ("tests/finetuning/test_classifier_heads.py",), True),
    Break("name_map", "the converter swaps the query and key kernels",
          "xlnet/interop/hf_names.py",
          '    ("rel_attn/q/kernel", "rel_attn.q", False, _ATTN),\n'
          '    ("rel_attn/k/kernel", "rel_attn.k", False, _ATTN),',
          '    ("rel_attn/q/kernel", "rel_attn.k", False, _ATTN),\n'
          '    ("rel_attn/k/kernel", "rel_attn.q", False, _ATTN),',
          ("tests/interop/test_convert.py",), True),
    Break("flag_check", "--perm_size no longer has to divide --reuse_len",
          "xlnet/data/input_pipeline.py",
          "if not 0 < perm_size <= min(reuse_len, rest_len) or reuse_len "
          "% perm_size \\\n      or rest_len % perm_size:",
          "if not 0 < perm_size <= min(reuse_len, rest_len):",
          ("tests/data/test_input_fn.py", "tests/pretraining/test_flags.py"),
          False),
    Break("message", "the corrupted-record line no longer says the progress "
          "was saved", "xlnet/training/trainer.py",
          'f"{step} (progress saved in model.ckpt-{step}): {where}"',
          'f"{step}: {where}"',
          ("tests/pretraining/test_train_gpu.py",), False),
    Break("weight_decay", "weight decay reaches LayerNorm and biases",
          "xlnet/training/optimizer.py",
          '_NO_DECAY_PATTERNS = ("LayerNorm", "layer_norm", "bias")',
          '_NO_DECAY_PATTERNS = ("no_such_variable",)',
          ("tests/training/test_optimizer.py",), False),
)


def _pytest(args, env_name="reference"):
  """(caught, seconds): whether pytest failed on `args`."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", XLNET_TEST_ENV=env_name)
  start = time.time()
  python = os.path.join(REPO, ".venvs", env_name, "bin", "python")
  proc = subprocess.run([python, "-m", "pytest", "-q", "-x", "-p",
                         "no:cacheprovider", *args], cwd=REPO, env=env,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  return proc.returncode not in (0, 5), time.time() - start


def _uncommitted(path):
  out = subprocess.run(["git", "status", "--porcelain", path], cwd=REPO,
                       capture_output=True, text=True).stdout
  return bool(out.strip())


def check(brk):
  """Applies `brk`, runs its tests (and the quick tier), restores the file.

  Returns:
    (caught by the named files, seconds, caught by the quick tier or None).
  """
  path = os.path.join(REPO, brk.path)
  with open(path, encoding="utf-8") as f:
    original = f.read()
  if original.count(brk.old) != 1:
    raise SystemExit(f"check_breaks.py: {brk.name}: the piece to break "
                     f"occurs {original.count(brk.old)} times in {brk.path} "
                     f"(expected once): update BREAKS")
  try:
    with open(path, "w", encoding="utf-8") as f:
      f.write(original.replace(brk.old, brk.new))
    env_name = "interop" if brk.tests[0].startswith("tests/interop") else (
        "reference")
    caught, seconds = _pytest(list(brk.tests), env_name)
    quick = _pytest(["-m", "quick", "tests"])[0] if brk.quick else None
  finally:
    with open(path, "w", encoding="utf-8") as f:
      f.write(original)
  return caught, seconds, quick


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("names", nargs="*", help="breaks to check (default: "
                      "all): " + ", ".join(b.name for b in BREAKS))
  args = parser.parse_args()
  chosen = [b for b in BREAKS if not args.names or b.name in args.names]
  unknown = set(args.names) - {b.name for b in BREAKS}
  if unknown:
    parser.error(f"unknown breaks: {', '.join(sorted(unknown))}")
  dirty = sorted({b.path for b in chosen if _uncommitted(b.path)})
  if dirty:
    parser.error(f"uncommitted changes in {', '.join(dirty)}: commit or "
                 "stash them first")
  print("| break | what | caught by | quick tier |")
  print("|---|---|---|---|")
  missed = 0
  for brk in chosen:
    caught, seconds, quick = check(brk)
    missed += (not caught) + (quick is False)
    files = ", ".join(f"`{t}`" for t in brk.tests)
    print(f"| {brk.name} | {brk.what} | "
          f"{'caught' if caught else 'MISSED'} by {files} ({seconds:.0f} s) "
          f"| {'-' if quick is None else 'caught' if quick else 'MISSED'} |",
          flush=True)
  sys.exit(1 if missed else 0)


if __name__ == "__main__":
  main()
