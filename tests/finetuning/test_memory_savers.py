"""The memory plan with activation recomputation, frozen layers and the
measured points (`memory_model.py`, `memory_plan.py`): the terms written out
by hand, the published measurements never refused (whatever the model
says), the refusal's list of what would fit, and --recompute and
--freeze_layers passed from the programs' and reproduce.py's flags to the
plan and the commands."""
import dataclasses
import json
import os

import pytest

from tests import classifier_fixtures as fx
from xlnet.reproduce import api as reproduce_api
from xlnet.reproduce import memory_model
from xlnet.reproduce import memory_plan

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GIB = 2 ** 30
# 2 layers, d_model 8, 2 heads of 4, d_inner 16, 10 tokens (parameters by
# hand in test_memory_plan.py: backbone 1424, classifier head 90; a layer
# 632, its matrices 5 * 8*2*4 + 2 * 8*16 = 576; the embedding 10 * 8 = 80).
TINY = dict(n_layer=2, d_model=8, n_head=2, d_head=4, d_inner=16,
            ff_activation="gelu", untie_r=True, n_token=10)
# Sequence length 4, 2 sequences: [4, 2, 8] is 64 entries, masks [2, 4, 4]
# 32.
EMBEDDING = {"word dropout mask": 64, "positional encodings": 2 * 64 * 4,
             "segment matrix": 32 * 4}
# The largest batch one 16 GB GPU ran with the release's run_classifier.py
# and run_squad.py (TF 1.13.1, fp32): its README, "Memory Issue during
# Finetuning". {(model, seq_len): batch}
RELEASE_16GB = {("base", 64): 120, ("base", 128): 56, ("base", 256): 24,
                ("base", 512): 8, ("large", 64): 16, ("large", 128): 8,
                ("large", 256): 2, ("large", 512): 1}


def _released(name):
  with open(os.path.join(REPO, f"xlnet/configs/xlnet_{name}.json")) as f:
    return json.load(f)


@pytest.mark.quick
def test_recompute_keeps_each_layers_input_by_hand():
  plain = memory_model.step_memory(TINY, "classifier", 4, 2, "fp32")
  again = memory_model.step_memory(TINY, "classifier", 4, 2, "fp32",
                                   recompute=True)
  # the layer below the top keeps its input [4, 2, 8] in float32 and of the
  # rest of what it kept (k, v 512, queries 768, positional q, k 768,
  # probabilities 64 x 9 = 576, attention vector 256, layer norms 1408,
  # feed-forward 4 x 128 x 4 + 128 x 5 = 2688: 6976) the share that the
  # measurement found recomputation does not save; the top layer's phases
  # (one layer made again) are unchanged
  saving = memory_model.RECOMPUTE_SAVING
  assert again.below == dict(EMBEDDING, **{
      "layers: input": 256,
      "layers: not saved by recomputation": pytest.approx(
          (1 - saving) * 6976)})
  assert again.top == plain.top and again.state == plain.state
  assert sum(plain.below.values()) - sum(again.below.values()) == (
      pytest.approx(saving * 6976))
  # bfloat16: one layer's compute-dtype weight copies (576 x 2 bytes), not
  # every layer's
  bf16 = memory_model.step_memory(TINY, "classifier", 4, 2, "bf16")
  bf16_again = memory_model.step_memory(TINY, "classifier", 4, 2, "bf16",
                                        recompute=True)
  assert bf16.below["layers: weight copies"] == 2 * 1152
  assert bf16_again.below["layers: weight copies"] == 1152


@pytest.mark.quick
def test_frozen_layers_by_hand():
  # --freeze_layers=1: the embedding (80), the relative biases (3 x 2 x 8 =
  # 48), the segment embeddings (2 x 2 x 8 = 32) and layer 0 (632) frozen;
  # 1514 - 792 = 722 trained: their slots, sums and gradients only
  one = memory_model.step_memory(TINY, "classifier", 4, 2, "fp32",
                                 accumulate=True, freeze_layers=1)
  assert one.state["weights"] == 1514 * 4
  assert one.state["adam slots"] == 722 * 8
  assert one.sums == 722 * 4
  assert one.end == {"gradients": 722 * 4}
  # nothing kept below the top layer (the only trained one) but what the
  # layers read: no word dropout mask (the embedding gets no gradient)
  assert {k: v for k, v in one.below.items() if v} == {
      "positional encodings": 512, "segment matrix": 128}
  # every layer frozen: the head alone (90 weights) trains; the backward
  # pass is the head's
  head = memory_model.step_memory(TINY, "squad", 4, 2, "fp32",
                                  freeze_layers=2)
  squad_head = 9 + 161 + 144
  assert head.state["adam slots"] == squad_head * 8
  assert set(head.top) == {"forward: score sum", "backward: head"}
  with pytest.raises(ValueError, match=r"^--freeze_layers=3 must be <= n_layer=2 "):
    memory_model.step_memory(TINY, "squad", 4, 2, "fp32", freeze_layers=3)


@pytest.mark.quick
def test_device_copies_hold_the_gradient_sums_by_hand():
  """A device's weight copies are copies of the gradients; the sums are the
  first of them (added where a device holds fewer than one)."""
  step = memory_model.StepMemory(
      state={"weights": 100, "adam slots": 200}, below={"kept": 50},
      top={"phase": 10}, end={"gradients": 100}, sums=100)
  plain = dataclasses.replace(step, sums=0)
  terms = memory_plan.DeviceTerms(1.2, 4.5, "test")
  # 1.04 x max(300 + 1.2 x 60 + 450, 300 + 100 + 450): the same with sums
  assert step.device_peak_bytes(terms) == pytest.approx(1.04 * 850)
  assert plain.device_peak_bytes(terms) == pytest.approx(1.04 * 850)
  # half a copy (50) on the device: the sums (100) take its place
  half = memory_plan.DeviceTerms(1.2, 0.5, "test")
  assert step.device_peak_bytes(half) == pytest.approx(1.04 * 500)
  assert plain.device_peak_bytes(half) == pytest.approx(1.04 * 450)


# ---- a measured point outranks the model -------------------------------------
# Terms under which the estimate refuses everything: only a measured point
# can let a batch through.
ABSURD = memory_plan.DeviceTerms(1000.0, 1000.0, "test",
                                 memory_plan.PUBLISHED_POINTS)


@pytest.mark.quick
def test_the_published_batches_are_never_refused():
  """Every published batch per 16 GB GPU is planned as it is, for both heads,
  without accumulation and with it, with --recompute and --freeze_layers,
  and on larger devices, even by terms that refuse everything; the batch
  above it is not; RACE counts its 4 sequences."""
  for (name, seq_len), batch in RELEASE_16GB.items():
    config = _released(name)
    for kind in ("classifier", "squad"):
      for steps, gib, options in ((1, 16, {}), (4, 16, {}), (2, 24, {}),
                                  (3, 16, {"recompute": True,
                                           "freeze_layers": 6})):
        plan = memory_plan.plan_accumulation(
            config, kind, seq_len, batch * steps, 1, "fp32", gib, ABSURD,
            **options)
        assert (plan.micro_batch, plan.accum_steps) == (batch, steps)
        assert plan.measured == (f"the release measured {batch} x "
                                 f"{seq_len} of XLNet-{name.capitalize()} "
                                 "on a 16 GB GPU")
        assert f"but {plan.measured}" in plan.summary()
      # one above: split (the measured batch, or a divisor of the batch)
      plan = memory_plan.plan_accumulation(config, kind, seq_len, batch + 1,
                                           1, "fp32", 16, ABSURD)
      assert plan.micro_batch == 1 or plan.micro_batch <= batch
      # not this measured point: a smaller device, bfloat16, twice the
      # length (the point of that length, if any)
      for args, want in (((seq_len, "fp32", 12), 0),
                         ((seq_len, "bf16", 16), 0),
                         ((2 * seq_len, "fp32", 16),
                          RELEASE_16GB.get((name, 2 * seq_len), 0))):
        assert memory_plan.max_micro_batch(config, kind, *args, True,
                                           ABSURD) == want
  # RACE: XLNet-Base's 8 sequences of 512 are 2 questions
  assert memory_plan.max_micro_batch(_released("base"), "race", 512, "fp32",
                                     16, False, ABSURD) == 2


@pytest.mark.quick
def test_the_papers_large_batches_plan_on_16_gb():
  """SQuAD 48 x 512 and IMDB 32 x 512 of XLNet-Large: one sequence per
  16 GB GPU with accumulation (the release ran one without); RACE's
  question of 4 sequences does not fit but with --recompute."""
  large = _released("large")
  squad = memory_plan.plan_accumulation(large, "squad", 512, 48, 1, "fp32",
                                        16)
  assert (squad.micro_batch, squad.accum_steps) == (1, 48)
  imdb = memory_plan.plan_accumulation(large, "classifier", 512, 32, 4,
                                       "fp32", 16)
  assert (imdb.micro_batch, imdb.accum_steps) == (1, 8)
  with pytest.raises(ValueError, match=r"would fit: --recompute \(about"):
    memory_plan.plan_accumulation(large, "race", 512, 32, 1, "fp32", 16)
  race = memory_plan.plan_accumulation(large, "race", 512, 32, 1, "fp32", 16,
                                       recompute=True)
  assert race.micro_batch >= 1 and race.estimated_gb <= 0.9 * 16
  assert "fp32 with --recompute:" in race.summary()


def test_a_calibrations_points_are_never_refused(tmp_path):
  """A peak measured within 90% of the device lets its batch through even
  where the estimate would not; one above it does not."""
  path = tmp_path / "c.json"
  with open(path, "w") as f:
    json.dump({"format": memory_plan.CALIBRATION_FORMAT, "device": "GPU:0 X",
               "points": [dict(config=TINY, task_kind="squad", seq_len=256,
                               micro_batch=6, precision="bf16",
                               accumulate=True, peak_bytes=int(7 * GIB))]},
              f)
  terms = dataclasses.replace(memory_plan.read_calibration(str(path)),
                              activation_factor=1e9, weight_copies=1e9)
  # 7 GiB fits 0.9 x 8 GiB: 6 x 256 and less; a 7.5 GiB device does not
  most = lambda gib, seq_len=256: memory_plan.max_micro_batch(  # noqa: E731
      TINY, "squad", seq_len, "bf16", gib, True, terms)
  assert (most(8), most(16), most(7.5), most(8, 128), most(8, 257)) == (
      6, 6, 0, 6, 0)
  plan = memory_plan.plan_accumulation(TINY, "squad", 256, 24, 2, "bf16", 8,
                                       terms)
  assert (plan.micro_batch, plan.accum_steps) == (6, 2)
  assert plan.measured == f"calibration file {path} (measured on GPU:0 X) " \
      "measured 6 x 256"


# ---- refusals name what would fit --------------------------------------------
def _fake_estimate(monkeypatch):
  """GiB = 1 + micro-batch x (4, or 1 with recompute; halved in float16 /
  bfloat16) + 0.5 with accumulation - 1 per frozen layer."""
  def fake(xlnet_config, task_kind, seq_len, micro_batch, precision,
           accumulate=False, terms=None, recompute=False, freeze_layers=0):
    del xlnet_config, task_kind, seq_len, terms
    per = (1 if recompute else 4) * (1 if precision == "fp32" else 0.5)
    return (1 + micro_batch * per + 0.5 * accumulate - freeze_layers) * GIB
  monkeypatch.setattr(memory_plan, "step_peak_bytes", fake)


@pytest.mark.quick
def test_a_refusal_names_what_would_fit(monkeypatch):
  _fake_estimate(monkeypatch)
  plan = lambda gib, *args, **kw: memory_plan.plan_accumulation(  # noqa: E731
      TINY, "squad", 512, 8, 1, *args, gib, **kw)
  # 4 GiB (3.6): 5.5 alone; 2.5 with recompute, 3.5 in bfloat16, 3.5 with
  # both layers frozen (4.5 with one); 5.5 <= 0.9 x 24
  with pytest.raises(ValueError) as e:
    plan(4, "fp32")
  assert str(e.value) == (
      "squad at 512 tokens in fp32: even 1 example per micro-step needs "
      "about 5.5 GiB, more than 3.6 GiB (90% of 4 GiB); would fit: "
      "--recompute (about 2.5 GiB); --use_fp16 or --use_bfloat16 (about 3.5 "
      "GiB); --freeze_layers=2 (about 3.5 GiB); 24 GB devices; or a shorter "
      "--max_seq_length")
  # 2.5 GiB (2.25): neither recompute (2.5) nor bfloat16 (3.5) alone, both
  # (2.0); no freezing (3.5)
  with pytest.raises(ValueError, match=r"GiB\); would fit: --recompute with "
                     r"--use_fp16 or --use_bfloat16 \(about 2\.0 GiB\); 24 GB "
                     r"devices; or a shorter --max_seq_length$"):
    plan(2.5, "fp32")
  # recompute and bfloat16 already (2.0 GiB): one frozen layer (1.0) fits
  # 1.2 GiB (1.08); nothing is offered twice
  with pytest.raises(ValueError, match=r"^squad at 512 tokens in bf16 with "
                     r"--recompute: even 1 example per micro-step needs about "
                     r"2\.0 GiB.*; would fit: --freeze_layers=1 \(about 1\.0 "
                     r"GiB\); 24 GB devices; or"):
    plan(1.2, "bf16", recompute=True)


# ---- the programs and reproduce.py pass the options on -----------------------
def _planned(tmp_path, caplog, *argv, recompute=False, freeze_layers=0):
  """run_squad.py's batch layout for `argv` with --recompute and
  --freeze_layers set, and the plan line it logs, for XLNet-Large."""
  from xlnet import model as model_lib  # pylint: disable=g-import-not-at-top
  from xlnet.flags import catalog  # pylint: disable=g-import-not-at-top
  from xlnet.flags import finetuning as finetune_flags  # pylint: disable=g-import-not-at-top
  from xlnet.programs import run_squad  # pylint: disable=g-import-not-at-top
  values = catalog.parse_fresh(run_squad.define_flags, [
      "run_squad.py", f"--model_dir={tmp_path / 'm'}", *argv])
  values.recompute, values.freeze_layers = recompute, freeze_layers
  caplog.clear()
  with caplog.at_level("INFO", logger="absl"):
    engine = finetune_flags.memory_planned(
        values, finetune_flags.engine_config(values),
        model_lib.XLNetConfig.from_dict(_released("large"), source="test"),
        "squad")
  return engine.layout, list(caplog.messages)


@pytest.mark.quick
def test_the_programs_plan_with_recompute_and_frozen_layers(tmp_path,
                                                          caplog):
  """run_squad.py --device_memory_gb=16 at XLNet-Large, 512 tokens, 8 per
  step: 1 x 8 as the release measured; --recompute and --freeze_layers
  leave room for more per micro-step and say so; a refusal lists what
  would fit."""
  argv = ("--max_seq_length=512", "--train_batch_size=8",
          "--device_memory_gb=16")
  layout, _ = _planned(tmp_path, caplog, *argv)
  assert (layout.bsz_per_core, layout.accum_steps) == (1, 8)
  for options, words in (({"recompute": True}, "with --recompute:"),
                         ({"freeze_layers": 12}, "with --freeze_layers=12:")):
    layout, lines = _planned(tmp_path, caplog, *argv, **options)
    assert layout.bsz_per_core > 1, options
    assert layout.bsz_per_core * layout.accum_steps == 8
    assert f"squad 8 x 512 fp32 {words} {layout.bsz_per_core} " in lines[0]
  with pytest.raises(ValueError, match=r"^--device_memory_gb=8: squad at 512 "
                     r"tokens in fp32: even 1 example .* would fit: "
                     r"--freeze_layers=\d+ \(about"):
    _planned(tmp_path, caplog, "--max_seq_length=512", "--device_memory_gb=8")


@pytest.mark.quick
def test_reproduce_commands_carry_recompute_and_frozen_layers(tmp_path):
  """reproduce.py --recompute --freeze_layers=6 --device_memory_gb=16 plans
  RACE of XLNet-Large with both and passes both to the program."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  from xlnet.flags import finetuning as finetune_flags  # pylint: disable=g-import-not-at-top
  from xlnet.programs import reproduce  # pylint: disable=g-import-not-at-top
  config = fx.write_config(str(tmp_path / "large"), _released("large"))
  values = flags.FlagValues()
  reproduce.define_flags(values)
  values(["reproduce.py", "--table=race", "--model_size=large",
          f"--data_root={tmp_path / 'data'}", f"--work_dir={tmp_path / 'w'}",
          "--init_checkpoint=/m/x", "--spiece_model_file=/m/s",
          f"--model_config_path={config}", "--num_seeds=1",
          "--device_memory_gb=16", "--recompute", "--freeze_layers=6",
          "--dry_run"])
  cfg = finetune_flags.resolve_reproduce(values)
  (run,) = reproduce_api.plan_table(cfg)
  assert "--recompute=True" in run.command
  assert "--freeze_layers=6" in run.command
  assert run.plan.describe().startswith(
      f"global batch 32 = {run.plan.micro_batch} per device x 1 device x "
      f"{run.plan.accum_steps} accumulation steps; fp32 with --recompute "
      "--freeze_layers=6; about ")
  # without them, neither flag (and RACE of XLNet-Large does not fit 16 GB)
  (run,) = reproduce_api.plan_table(dataclasses.replace(
      cfg, freeze_layers=0, device_memory_gb=None))
  assert not [a for a in run.command if a.startswith(
      ("--freeze_layers", "--recompute=False"))]
  with pytest.raises(ValueError, match=r"^--device_memory_gb=16: race: race "
                     r"at 512 tokens in fp32: even 1 example .* would fit: "
                     r"--recompute"):
    reproduce_api.plan_table(dataclasses.replace(cfg, recompute=False,
                                                 freeze_layers=0))
