"""A multi-label classifier to HuggingFace and back, without PyTorch: the
export's config.json says HF's `problem_type` "multi_label_classification"
and the label names fine-tuning recorded (task.json), the import records
them again, and a second export writes the same config.json and tensors.
(HF computing our logits and its BCEWithLogits loss on the export:
tests/interop/test_hf_parity.py; the SavedModel's sigmoid probabilities of
a fine-tuned multi-label model_dir: tests/finetuning/test_multi_label_run.py.)
"""
import json
import os

import pytest
from safetensors import numpy as safetensors_numpy

from tests.interop import interop_fixtures as fx
from xlnet.interop import hf_export
from xlnet.interop import hf_import

LABELS = ["art", "politics", "sport"]  # fx.N_CLASS of them


def write_task_record(directory, **record):
  """task.json of a multi-label fine-tuning of the checkpoint's head."""
  with open(os.path.join(directory, "task.json"), "w") as f:
    json.dump(dict({"kind": "classifier", "task_name": fx.TASK,
                    "cls_scope": None, "label_list": LABELS,
                    "multi_label": True, "label_delimiter": "|",
                    "multi_label_threshold": 0.5}, **record), f)


def _config(hf_dir):
  with open(os.path.join(hf_dir, "config.json")) as f:
    return json.load(f)


@pytest.mark.quick
def test_problem_type_and_labels_go_to_hf_and_back(tmp_path):
  prefix, _, config, _ = fx.copied_checkpoint(str(tmp_path / "ckpt"),
                                                   "classification")
  write_task_record(os.path.dirname(prefix))
  hf1, tf_dir, hf2 = (str(tmp_path / n) for n in ("hf1", "tf", "hf2"))
  assert hf_export.export_hf(prefix, config, fx.SPIECE, hf1, fx.TASK) == (
      "XLNetForSequenceClassification")
  exported = _config(hf1)
  assert exported["problem_type"] == "multi_label_classification"
  assert exported["id2label"] == {"0": "art", "1": "politics", "2": "sport"}
  assert exported["label2id"] == {"art": 0, "politics": 1, "sport": 2}
  assert exported["finetuning_task"] == fx.TASK

  back = hf_import.import_hf(hf1, tf_dir)
  with open(os.path.join(tf_dir, "task.json")) as f:
    assert json.load(f) == {"kind": "classifier", "task_name": fx.TASK,
                            "cls_scope": None, "label_list": LABELS,
                            "multi_label": True}
  hf_export.export_hf(back, config, fx.SPIECE, hf2)
  assert _config(hf2) == exported
  first = safetensors_numpy.load_file(os.path.join(hf1, "model.safetensors"))
  second = safetensors_numpy.load_file(os.path.join(hf2,
                                                    "model.safetensors"))
  assert sorted(first) == sorted(second)
  for name, value in first.items():
    assert second[name].tobytes() == value.tobytes(), name
  assert first["logits_proj.weight"].shape == (len(LABELS), 8)

  # Single-label: the record without multi_label, HF's single label.
  write_task_record(os.path.dirname(prefix), multi_label=False)
  single = str(tmp_path / "single")
  hf_export.export_hf(prefix, config, fx.SPIECE, single, fx.TASK)
  assert _config(single)["problem_type"] == "single_label_classification"
  hf_import.import_hf(single, str(tmp_path / "single_tf"))
  with open(os.path.join(tmp_path, "single_tf", "task.json")) as f:
    assert "multi_label" not in json.load(f)
