"""The fine-tuning memory model (`memory_model.py`) against counts written out
by hand and against the graphs the heads build, the plans against every
published GPU measurement, a calibration file's peaks, the accumulation
planner on hand-worked cases, and (slow) a measured peak: accumulation holds
one micro-batch's activations at a time."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from xlnet import model as model_lib
from xlnet.finetuning import config as finetune_config
from xlnet import task_kinds
from xlnet.reproduce import memory_model
from xlnet.reproduce import memory_plan
from xlnet.finetuning.classifier import head as classifier_head
from xlnet.finetuning.race import head as race_head
from xlnet.finetuning.squad import head as squad_head

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GIB = 2 ** 30

# 2 layers, d_model 8, 2 heads of 4, d_inner 16, 10 tokens.
TINY = dict(n_layer=2, d_model=8, n_head=2, d_head=4, d_inner=16,
            ff_activation="gelu", untie_r=True, n_token=10)
# By hand: embedding 10*8 = 80; r_w, r_r, r_s biases 3 * (2 layers * 2 * 4)
# = 48; seg_embed 2 * 2 * 2 * 4 = 32; a layer: q, k, v, r, o 5 * 8*2*4 =
# 320, LayerNorm 16, layer_1 8*16 + 16 = 144, layer_2 16*8 + 8 = 136,
# LayerNorm 16: 632, two layers 1264. Backbone 80 + 48 + 32 + 1264 = 1424.
TINY_BACKBONE = 1424
# Heads: summary 8*8 + 8 = 72, then classifier logit 8*2 + 2 = 18; RACE
# logit 8 + 1 = 9; SQuAD start 8 + 1 = 9, end 16*8 + 8 + 16 + 8 + 1 = 161,
# answer class 16*8 + 8 + 8 = 144.
TINY_HEADS = {"classifier": 72 + 18, "race": 72 + 9, "squad": 9 + 161 + 144}


@pytest.mark.quick
def test_parameters_by_hand():
  for kind, head in TINY_HEADS.items():
    assert memory_model.param_count(TINY, kind) == TINY_BACKBONE + head


def _features(kind, bsz, seq_len):
  width = seq_len * (4 if kind == "race" else 1)
  ints = tf.zeros([bsz, width], tf.int32)
  out = {"input_ids": ints, "segment_ids": ints,
         "input_mask": tf.zeros([bsz, width]),
         "label_ids": tf.zeros([bsz], tf.int32)}
  if kind == "squad":
    out.update(p_mask=tf.zeros([bsz, seq_len]),
               cls_index=tf.zeros([bsz], tf.int32),
               start_positions=tf.zeros([bsz], tf.int32),
               end_positions=tf.zeros([bsz], tf.int32),
               is_impossible=tf.zeros([bsz]))
  return out


@pytest.mark.parametrize("kind", ["classifier", "squad", "race"])
def test_parameters_match_the_built_graph(kind):
  config = model_lib.XLNetConfig(**dict(TINY, n_layer=3, d_model=16,
                                        d_inner=24, n_token=50))
  model = finetune_config.ModelConfig(xlnet_config=config)
  features = _features(kind, 2, 6)
  run_config = model.run_config(True)
  if kind == "classifier":
    classifier_head.get_classification_loss(config, run_config, features,
                                            2, "classification_x")
  elif kind == "squad":
    squad_head.get_qa_loss(config, run_config, features)
  else:
    race_head.get_race_loss(config, run_config, features)
  built = sum(int(np.prod(v.shape))
              for v in tf.compat.v1.trainable_variables())
  assert memory_model.param_count(config, kind) == built


def test_state_by_hand():
  est = memory_model.step_memory(TINY, "classifier", 4, 2, "bf16")
  # float32 weights and two float32 Adam slots whatever the precision;
  # constants in bfloat16: positional encodings [2 * 4, 2, 8] (256 bytes)
  # and the [4, 4] self-visibility matrix (32); scores [2, 2, 4, 4] (128)
  assert est.state == {"weights": 1514 * 4, "adam slots": 1514 * 8,
                       "folded constants": 256 + 32,
                       "score-sum constant": 128}
  acc = memory_model.step_memory(TINY, "classifier", 4, 2, "bf16",
                                accumulate=True)
  # the sums live through the step's micro-batches and its update
  assert acc.state == est.state and acc.below == est.below
  assert (est.sums, acc.sums) == (0, 1514 * 4)
  assert est.end == acc.end == {"gradients": 1514 * 4}
  assert acc.update_peak - est.update_peak == 1514 * 4
  assert acc.activation_peak - est.activation_peak == 1514 * 4


def test_layer_terms_by_hand():
  # seq 4, 2 sequences: scores [2, 2 heads, 4, 4] = 64 entries;
  # [4, 2, d_model 8] = 64; heads [4, 2, 2, 4] = 64; [4, 2, d_inner 16] = 128.
  fp32 = memory_model.layer_activation_terms(
      memory_model.ModelSizes.of(TINY), 4, 2, "fp32")
  # probabilities float32 256 + keep mask 64 + dropped float32 256
  assert fp32["attention probabilities"] == 576
  # input 64 * 4; k, v 2 * 64 * 4; queries 3 * 64 * 4; q, k copies (k over
  # 2 * 4 relative positions) 3 * 64 * 4; attention vector 64 * 4
  assert fp32["input"] == 256
  assert fp32["keys, values"] == 512
  assert fp32["biased queries"] == 768
  assert fp32["positional q, k"] == 768
  assert fp32["attention vector"] == 256
  # 2 LayerNorms x (float32 input + scale) 4 * 64 * 4, the first's output
  # 64 * 4, two dropout masks 2 * 64
  assert fp32["layer norms"] == 1024 + 256 + 128
  # GELU: input, 0.5 x, 1 + tanh and x^2 (4 * 128 * 4); dropped hidden
  # 128 * 4; its mask 128
  assert fp32["feed-forward"] == 2048 + 512 + 128
  bf16 = memory_model.layer_activation_terms(
      memory_model.ModelSizes.of(TINY), 4, 2, "bf16")
  # probabilities stay float32 (256), mask 64, dropped cast to bfloat16 128
  assert bf16["attention probabilities"] == 448
  assert bf16["feed-forward"] == 1024 + 256 + 128
  assert bf16["layer norms"] == 1024 + 128 + 128


def test_race_examples_are_four_sequences():
  race = memory_model.step_memory(TINY, "race", 8, 3, "fp32")
  cls = memory_model.step_memory(TINY, "classifier", 8, 12, "fp32")
  assert race.below == cls.below
  assert race.top == cls.top


def test_estimate_grows_with_batch_length_and_precision():
  base = memory_model.ModelSizes.of(
      json.load(open(os.path.join(REPO, "xlnet/configs/xlnet_base.json"))))
  peak = lambda *a: memory_plan.step_peak_bytes(base, *a)  # noqa: E731
  assert peak("squad", 512, 4, "fp32") > peak("squad", 512, 2, "fp32")
  assert peak("squad", 512, 2, "fp32") > peak("squad", 256, 2, "fp32")
  assert peak("squad", 512, 2, "fp32") > peak("squad", 512, 2, "bf16")
  assert peak("squad", 512, 2, "bf16") == peak("squad", 512, 2, "fp16")


def _fake_estimate(monkeypatch):
  """Estimates of 1 GiB per example, plus 0.5 GiB with accumulation."""
  def fake(xlnet_config, task_kind, seq_len, micro_batch, precision,
           accumulate=False, terms=None, recompute=False, freeze_layers=0):
    del xlnet_config, task_kind, seq_len, precision, terms, recompute
    del freeze_layers
    return (micro_batch + (0.5 if accumulate else 0.0)) * GIB
  monkeypatch.setattr(memory_plan, "step_peak_bytes", fake)


@pytest.mark.quick
def test_plan_smallest_accumulation_that_fits(monkeypatch):
  _fake_estimate(monkeypatch)
  # 48 over 4 replicas: 12 each. 8 GiB x 0.9 = 7.2 GiB: 12 (12 GiB) does not
  # fit; accumulation 2 gives 6 (6.5 GiB), which does; 3 would give 4.
  plan = memory_plan.plan_accumulation(TINY, "squad", 512, 48, 4, "fp32", 8)
  assert (plan.micro_batch, plan.accum_steps) == (6, 2)
  assert plan.micro_batch * 4 * plan.accum_steps == 48
  assert plan.fits and plan.estimated_gb == 6.5
  assert plan.budget_gb == pytest.approx(7.2)
  # No accumulation when the whole per-replica batch fits (8 <= 14.4).
  plan = memory_plan.plan_accumulation(TINY, "squad", 512, 32, 4, "fp32", 16)
  assert (plan.micro_batch, plan.accum_steps) == (8, 1)
  # 7 per replica (prime) in 4 GiB (3.6): only 7 x 1 keeps the batch.
  plan = memory_plan.plan_accumulation(TINY, "race", 512, 7, 1, "bf16", 4)
  assert (plan.micro_batch, plan.accum_steps) == (1, 7)
  assert "1 questions (x4 sequences) per device x 1 device(s) x 7" in (
      plan.summary())


def test_plan_refusals(monkeypatch):
  _fake_estimate(monkeypatch)
  with pytest.raises(ValueError, match=r"^global batch 10 is not a multiple "
                     r"of 4 replicas"):
    memory_plan.plan_accumulation(TINY, "squad", 512, 10, 4, "fp32", 80)
  # 1 example with accumulation needs 1.5 GiB > 0.9 x 1.6 = 1.44.
  with pytest.raises(ValueError, match=r"even 1 example per micro-step needs "
                     r"about 1\.5 GiB, more than 1\.4 GiB \(90% of 1\.6 GiB"):
    memory_plan.plan_accumulation(TINY, "squad", 512, 8, 1, "fp32", 1.6)
  with pytest.raises(ValueError, match="task_kind must be one of"):
    memory_plan.plan_accumulation(TINY, "glue", 512, 8, 1, "fp32", 16)
  with pytest.raises(ValueError, match="precision must be one of"):
    memory_plan.plan_accumulation(TINY, "squad", 512, 8, 1, "tf32", 16)
  with pytest.raises(ValueError, match="replicas must be a positive"):
    memory_plan.plan_accumulation(TINY, "squad", 512, 8, 0, "fp32", 16)


def test_plan_of_a_real_config_is_the_smallest_split():
  large = model_lib.XLNetConfig(
      json_path=os.path.join(REPO, "xlnet/configs/xlnet_large.json"))
  plan = memory_plan.plan_accumulation(large, "squad", 512, 48, 4, "fp32",
                                       40)
  assert plan.micro_batch * 4 * plan.accum_steps == 48
  assert plan.estimated_gb <= 0.9 * 40
  assert plan.accum_steps > 1
  # the next smaller accumulation (the next larger micro-batch) does not fit
  larger = [m for m in range(plan.micro_batch + 1, 13) if 12 % m == 0][0]
  assert memory_plan.step_peak_bytes(
      large, "squad", 512, larger, "fp32",
      accumulate=larger < 12) / GIB > 0.9 * 40


def test_max_micro_batch_by_hand(monkeypatch):
  _fake_estimate(monkeypatch)
  # 8 GiB x 0.9 = 7.2 GiB: without accumulation 7 examples (7 GiB) fit and
  # 8 do not; with it 6 (6.5 GiB) fit and 7 (7.5) do not.
  assert memory_plan.max_micro_batch(TINY, "squad", 512, "fp32", 8,
                                     accumulate=False) == 7
  assert memory_plan.max_micro_batch(TINY, "squad", 512, "fp32", 8) == 6
  # 100 GiB: 89.5 <= 90 (past several doublings); 1 GiB: not even one.
  assert memory_plan.max_micro_batch(TINY, "squad", 512, "fp32", 100) == 89
  assert memory_plan.max_micro_batch(TINY, "squad", 512, "fp32", 1) == 0


def test_max_micro_batch_is_the_last_that_fits():
  base = model_lib.XLNetConfig(
      json_path=os.path.join(REPO, "xlnet/configs/xlnet_base.json"))
  budget = 0.9 * 16 * GIB
  for kind in task_kinds.NAMES:
    most = memory_plan.max_micro_batch(base, kind, 256, "bf16", 16)
    assert most >= 1
    assert memory_plan.step_peak_bytes(base, kind, 256, most, "bf16",
                                       True) <= budget
    assert memory_plan.step_peak_bytes(base, kind, 256, most + 1, "bf16",
                                       True) > budget


def _measured(point):
  """bench/finetune_memory.py's measurement of one point (own process)."""
  out = subprocess.run(
      [sys.executable, os.path.join(REPO, "bench", "finetune_memory.py"),
       "--measure", point, "--n_token=1000"],
      capture_output=True, text=True, check=True, cwd=REPO)
  return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.slow
def test_accumulation_holds_one_micro_batch_at_a_time():
  # The same micro-batch (4 x 128, one layer of width 128: the activations
  # still outweigh 8 x the weights) without and with 4 accumulation steps:
  # accumulation may add the float32 gradient sums (4 bytes per weight) but
  # not a second micro-batch's activations (peak less what the step holds
  # between steps), of which it may add at most half.
  plain = _measured("classifier:fp32:1:128:128:4")
  acc = _measured("classifier:fp32:1:128:128:4:4")
  activations = plain["peak"] - plain["before"]
  assert activations > 8 * plain["params"]  # the bound is not vacuous
  assert acc["peak"] - plain["peak"] < (4 * plain["params"]
                                         + activations / 2)


# ---- held to the published GPU measurements ----------------------------------
def _released(name):
  with open(os.path.join(REPO, f"xlnet/configs/xlnet_{name}.json")) as f:
    return json.load(f)


# The largest batch that ran on one 16 GB GPU with the release's
# run_classifier.py / run_squad.py (TF 1.13.1, fp32, Adam), its README,
# "Memory Issue during Finetuning"
# (https://github.com/zihangdai/xlnet#memory-issue-during-finetuning):
# {(model, seq_len): batch}.
RELEASE_16GB = {("base", 64): 120, ("base", 128): 56, ("base", 256): 24,
                ("base", 512): 8, ("large", 64): 16, ("large", 128): 8,
                ("large", 256): 2, ("large", 512): 1}
# Batches that did not fit, from users' reports: (model, task, seq_len,
# GiB, batch). https://github.com/zihangdai/xlnet/issues/101: XLNet-Large
# SQuAD 2.0 at 512 tokens, 8 per 32 GB V100, out of memory before training.
FAILED = [("large", "squad", 512, 32, 8)]


@pytest.mark.quick
def test_plans_are_the_published_gpu_maxima():
  """Per device and micro-step, with accumulation or without, for both
  heads: exactly the release's maximum on 16 GB (a measured point outranks
  the model, and the batch above it, which did not fit, is never planned),
  and below every batch reported out of memory."""
  for (name, seq_len), most in RELEASE_16GB.items():
    for kind in ("classifier", "squad"):
      for accumulate in (False, True):
        planned = memory_plan.max_micro_batch(
            _released(name), kind, seq_len, "fp32", 16, accumulate)
        assert planned == most, (name, kind, seq_len, planned, most)
      # asked for the batch above the maximum, the planner splits it
      plan = memory_plan.plan_accumulation(
          _released(name), kind, seq_len, most + 1, 1, "fp32", 16)
      assert plan.micro_batch <= most and plan.accum_steps > 1
  for name, kind, seq_len, gib, failed in FAILED:
    assert memory_plan.max_micro_batch(_released(name), kind, seq_len,
                                       "fp32", gib, False) < failed


def _calibration(path, device, peaks_gib, config):
  """Writes a calibration file of measured peaks {(seq_len, batch): GiB}
  (the format bench/finetune_memory.py --calibrate writes)."""
  points = [dict(config=config, task_kind="classifier", seq_len=n,
                 micro_batch=b, precision="fp32", accumulate=False,
                 peak_bytes=int(gib * GIB))
            for (n, b), gib in peaks_gib.items()]
  with open(path, "w") as f:
    json.dump({"format": memory_plan.CALIBRATION_FORMAT, "device": device,
               "points": points}, f)
  return str(path)


def test_a_calibration_covers_its_measured_peaks(tmp_path):
  """The terms fitted to a file estimate at least every measured peak, so a
  measured batch above the budget is never planned; the terms name the
  file and the device."""
  large = _released("large")
  peaks = {(512, 1): 9.0, (512, 2): 15.0, (128, 2): 6.0, (128, 4): 8.5}
  path = _calibration(tmp_path / "c.json", "GPU:0 Fake V100", peaks, large)
  terms = memory_plan.read_calibration(path)
  assert terms.source == (f"calibration file {path} (measured on GPU:0 "
                          "Fake V100)")
  for (n, b), gib in peaks.items():
    assert memory_plan.step_peak_bytes(large, "classifier", n, b, "fp32",
                                       False, terms) >= gib * GIB
  # 15 GiB measured at 2 x 512 is over 90% of 16 GiB (14.4)
  assert memory_plan.max_micro_batch(large, "classifier", 512, "fp32", 16,
                                     False, terms) == 1
  # (Files that are no calibration: tests/core/test_settings_files.py.)


def _planned(tmp_path, caplog, name, *argv):
  """run_classifier.py's batch layout for `argv` (its flags resolved as the
  program resolves them) and the lines it logs, planned for model `name`."""
  from xlnet.flags import catalog  # pylint: disable=g-import-not-at-top
  from xlnet.flags import finetuning as finetune_flags  # pylint: disable=g-import-not-at-top
  from xlnet.programs import run_classifier  # pylint: disable=g-import-not-at-top
  values = catalog.parse_fresh(run_classifier.define_flags, [
      "run_classifier.py", f"--model_dir={tmp_path / 'm'}", *argv])
  caplog.clear()
  with caplog.at_level("INFO", logger="absl"):
    engine = finetune_flags.memory_planned(
        values, finetune_flags.engine_config(values),
        model_lib.XLNetConfig.from_dict(_released(name), source="test"),
        "classifier")
  return engine.layout, list(caplog.messages)


@pytest.mark.quick
def test_the_finetuning_programs_plan_with_device_memory_gb(tmp_path,
                                                          caplog):
  """run_classifier.py --device_memory_gb splits each device's examples per
  step into micro-batches the published measurements allow (XLNet-Base at
  128 tokens: at most 56 on 16 GB, so 64 are split), keeping the examples
  per step; a calibration file rules where given; the plan's source is
  logged first."""
  layout, lines = _planned(tmp_path, caplog, "base", "--max_seq_length=128",
                           "--train_batch_size=64", "--device_memory_gb=16")
  assert layout.accum_steps >= 2 and layout.bsz_per_core <= 56
  assert layout.bsz_per_core * layout.accum_steps == 64
  assert lines[0].startswith("Memory plan (published GPU measurements")
  assert f"{layout.bsz_per_core} sequences per device" in lines[0]
  # Without the flag: the flags as given.
  layout, lines = _planned(tmp_path, caplog, "base", "--max_seq_length=128",
                           "--train_batch_size=64")
  assert (layout.bsz_per_core, layout.accum_steps, lines) == (64, 1, [])
  # A (fake) calibration measured 15 GiB at 2 x 512 on XLNet-Large: one
  # sequence per micro-step on 16 GiB (14.4 GiB budget).
  path = _calibration(tmp_path / "c.json", "GPU:0 Fake V100",
                      {(512, 1): 9.0, (512, 2): 15.0}, _released("large"))
  layout, lines = _planned(tmp_path, caplog, "large", "--max_seq_length=512",
                           "--train_batch_size=2", "--accum_steps=2",
                           "--device_memory_gb=16",
                           f"--memory_calibration={path}")
  assert (layout.bsz_per_core, layout.accum_steps) == (1, 4)
  # Measured on a V100, planning this CPU: named in a warning first.
  assert lines[0] == (
      f"--memory_calibration={path} was measured on GPU:0 Fake V100, this "
      "run's device is CPU:0: the plan may not hold (bench/"
      "finetune_memory.py writes one on the device)")
  assert lines[1].startswith(f"Memory plan (calibration file {path}")
  with pytest.raises(ValueError, match=r"^--memory_calibration=.* needs "
                     r"--device_memory_gb"):
    _planned(tmp_path, caplog, "large", f"--memory_calibration={path}")
  # A file that is no calibration is named, without the advice of a plan
  # that does not fit (following it gave the same error).
  with open(path, "w") as f:
    json.dump({"format": memory_plan.CALIBRATION_FORMAT, "points": []}, f)
  with pytest.raises(ValueError) as caught:
    _planned(tmp_path, caplog, "large", "--device_memory_gb=16",
             f"--memory_calibration={path}")
  assert str(caught.value) == (
      f"--memory_calibration={path} is not a valid memory calibration: "
      "points is [], expected a non-empty list; bench/finetune_memory.py "
      "writes one on the device")
  with pytest.raises(ValueError, match=r"^--device_memory_gb=1: classifier "
                     r"at 512 tokens in fp32: even 1 example"):
    _planned(tmp_path, caplog, "large", "--max_seq_length=512",
             "--device_memory_gb=1")
