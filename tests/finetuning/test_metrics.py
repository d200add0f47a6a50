"""Metrics against values worked out by hand (in the comments)."""
import math

import numpy as np
import pytest

from xlnet.finetuning.classifier import metrics


@pytest.mark.quick
def test_accuracy():
  # 2 of 4 right.
  assert metrics.accuracy([1, 0, 1, 1], [1, 1, 1, 0]) == 0.5


@pytest.mark.quick
def test_f1_of_class_one():
  # TP = 2 (positions 0, 4), FP = 1 (position 2), FN = 1 (position 1):
  # F1 = 2*2 / (2*2 + 1 + 1) = 2/3.
  assert metrics.f1_score([1, 1, 0, 0, 1], [1, 0, 1, 0, 1]) == pytest.approx(
      2 / 3)
  # No positive label and no positive prediction: defined as 0.
  assert metrics.f1_score([0, 0], [0, 0]) == 0.0


@pytest.mark.quick
def test_matthews_correlation():
  # TP 2, TN 2, FP 1, FN 1: (2*2 - 1*1) / sqrt(3*3*3*3) = 3/9.
  assert metrics.matthews_corrcoef([1, 1, 1, 0, 0, 0],
                                   [1, 1, 0, 0, 0, 1]) == pytest.approx(1 / 3)
  # Perfect and perfectly inverted predictions.
  assert metrics.matthews_corrcoef([0, 1, 1, 0], [0, 1, 1, 0]) == 1.0
  assert metrics.matthews_corrcoef([0, 1, 1, 0], [1, 0, 0, 1]) == -1.0
  # One predicted class only: the denominator is 0, MCC defined as 0.
  assert metrics.matthews_corrcoef([0, 1, 1, 0], [1, 1, 1, 1]) == 0.0


def test_matthews_correlation_three_classes():
  # Confusion (rows label, cols prediction) [[2,0,0],[0,1,1],[1,0,1]]:
  # t = (2,2,2), p = (3,1,2), c = 4, s = 6.
  # (4*6 - (3*2+1*2+2*2)) / sqrt((36 - 14) * (36 - 12)) = 12 / sqrt(528).
  labels = [0, 0, 1, 1, 2, 2]
  preds = [0, 0, 1, 2, 0, 2]
  assert metrics.matthews_corrcoef(labels, preds) == pytest.approx(
      12 / math.sqrt(528))


@pytest.mark.quick
def test_pearson():
  # dx = (-1.5, -.5, .5, 1.5), dy = (-3, -1, 0, 4): 11 / sqrt(5 * 26).
  assert metrics.pearsonr([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(
      11 / math.sqrt(130))
  assert math.isnan(metrics.pearsonr([1, 1, 1], [1, 2, 3]))


def test_ranks_average_ties():
  assert metrics.rankdata([10, 20, 20, 5]).tolist() == [2, 3.5, 3.5, 1]
  assert metrics.rankdata([3, 3, 3]).tolist() == [2, 2, 2]


@pytest.mark.quick
def test_spearman_with_ties():
  # Ranks x (1, 2.5, 2.5, 4), y (1, 3, 2, 4): 4.5 / sqrt(4.5 * 5).
  assert metrics.spearmanr([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(
      4.5 / math.sqrt(22.5))
  # Monotone but not linear: Spearman 1, Pearson below 1.
  x = [1, 2, 3, 4, 5]
  y = [1, 8, 27, 64, 125]
  assert metrics.spearmanr(x, y) == pytest.approx(1.0)
  assert metrics.pearsonr(x, y) < 0.99


@pytest.mark.quick
def test_evaluation_metrics_ignore_fake_examples():
  # Three real examples (2 right: accuracy 2/3, loss mean (1+2+3)/3 = 2)
  # and two fake ones that would change every number if counted.
  logits = np.array([[2.0, 1.0], [0.0, 3.0], [5.0, 0.0],
                     [9.0, 0.0], [9.0, 0.0]])
  labels = [0, 1, 1, 1, 1]
  is_real = [1, 1, 1, 0, 0]
  loss = [1.0, 2.0, 3.0, 100.0, 100.0]
  got = metrics.evaluation_metrics(("accuracy", "f1", "mcc"), logits, labels,
                                   is_real, loss, is_regression=False)
  assert got["eval_accuracy"] == pytest.approx(2 / 3)
  assert got["eval_loss"] == pytest.approx(2.0)
  assert got["num_examples"] == 3
  # Class 1: TP 1, FN 1, FP 0: F1 = 2/3. MCC: TP1 TN1 FP0 FN1:
  # (1 - 0) / sqrt(1 * 2 * 1 * 2) = 1/2.
  assert got["eval_f1"] == pytest.approx(2 / 3)
  assert got["eval_mcc"] == pytest.approx(0.5)


def test_evaluation_metrics_regression():
  scores = np.array([1.0, 2.0, 3.0, -50.0])
  labels = [1.5, 2.5, 2.0, 4.0]
  got = metrics.evaluation_metrics(("pearsonr", "spearmanr"), scores, labels,
                                   [1, 1, 1, 0], [0.1, 0.2, 0.3, 9.0],
                                   is_regression=True)
  # Real pairs (1, 1.5), (2, 2.5), (3, 2): dx (-1, 0, 1), dy (-.5, .5, 0)
  # -> .5 / sqrt(2 * .5) = .5; ranks y (1, 3, 2) -> (-1*-1 + 0 + 1*0) /
  # sqrt(2 * 2) = .5.
  assert got["eval_pearsonr"] == pytest.approx(0.5)
  assert got["eval_spearmanr"] == pytest.approx(0.5)
  assert got["eval_loss"] == pytest.approx(0.2)
