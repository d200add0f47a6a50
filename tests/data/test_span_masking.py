"""Tests of span masking: the walk replayed draw for draw, its statistics,
the top-up, and the word-start table."""
import numpy as np
import pytest
import sentencepiece as spm

from tests.data_reference import RecordingRng, runs_of
from xlnet.data import pretrain_examples


def spec_walk(seg, is_start, goal, alpha, beta, draws):
  """The span walk on one part (no top-up), given its (u_n, u_l) draws."""
  p = 1.0 / np.arange(1, 6)
  cdf = np.cumsum(p / p.sum())
  mask, num, cursor = np.zeros(len(seg), dtype=bool), 0, 0
  for u_n, u_l in draws:
    if (goal is not None and num >= goal) or cursor >= len(seg):
      break
    n = min(int(np.sum(cdf <= u_n)) + 1, 5)
    if goal is not None:
      n = min(n, goal - num)
    ctx = n * alpha // beta
    left = int(u_l * ctx)
    starts = [k for k in range(cursor + left, len(seg)) if is_start[seg[k]]]
    if not starts or starts[0] + n >= len(seg):
      break
    mask[starts[0]:starts[0] + n] = True
    num += n
    cursor = starts[0] + n + ctx - left
  return mask


@pytest.mark.quick
def test_walk_replayed_against_the_rule():
  rs = np.random.RandomState(5)
  for trial in range(400):
    rows, seg_len = rs.randint(1, 4), rs.randint(1, 40)
    seg_len += seg_len == 2  # walk and top-up draws differ in shape
    is_start = rs.rand(20) < rs.choice([0.05, 0.4, 1.0])
    segs = rs.randint(0, 20, size=(rows, seg_len))
    alpha, beta = [(6, 1), (1, 1), (3, 2)][trial % 3]
    goal = None if trial % 4 == 0 else rs.randint(0, seg_len + 1, size=rows)
    reverse = rs.rand(rows) < 0.5
    rng = RecordingRng(trial)
    got = pretrain_examples.sample_masks(segs, is_start, goal, alpha, beta,
                                         rng, reverse)
    walks = [d for d in rng.draws if d.shape == (rows, 2)]
    top_up = [d for d in rng.draws if d.shape == (rows, seg_len)]
    for r in range(rows):
      g = None if goal is None else int(goal[r])
      seg = segs[r][::-1] if reverse[r] else segs[r]
      want = spec_walk(seg, is_start, g, alpha, beta, [w[r] for w in walks])
      if g is not None and want.sum() < g:
        # Top-up: the unmasked positions with the smallest keys.
        # (Keys index the walked, possibly reversed, order.)
        free = [k for k in np.argsort(top_up[0][r], kind="stable")
                if not want[k]]
        want[free[:g - want.sum()]] = True
      want = want[::-1] if reverse[r] else want
      np.testing.assert_array_equal(got[r], want, err_msg=str(trial))
      assert g is None or got[r].sum() == g


def test_walk_statistics():
  rng = np.random.RandomState(1)
  vocab = 50
  is_start = rng.rand(vocab) < 0.4
  seg = rng.randint(0, vocab, size=200000)
  mask = pretrain_examples.sample_mask(seg, is_start, None, 6, 1,
                                       np.random.RandomState(2))
  spans = runs_of(mask)
  assert all(is_start[seg[s]] for s, _ in spans)
  lengths = np.bincount([n for _, n in spans], minlength=6)[1:]
  p = 1.0 / np.arange(1, 6)
  expected = p / p.sum() * len(spans)
  assert len(spans) > 5000
  assert np.all(np.abs(lengths - expected) < 5 * np.sqrt(expected)), (
      lengths, expected)
  # With every piece a word start, each span of n takes n + ctx pieces.
  all_start = np.ones(vocab, dtype=bool)
  for alpha, beta in [(6, 1), (3, 2)]:
    mask = pretrain_examples.sample_mask(seg, all_start, None, alpha, beta,
                                         np.random.RandomState(3))
    n = np.arange(1, 6)
    want = (p * n).sum() / (p * (n + n * alpha // beta)).sum()
    assert abs(mask.mean() - want) < 0.01, (alpha, beta, mask.mean(), want)


def test_walk_end_goal_and_reverse():
  rng = np.random.RandomState(4)
  is_start = np.ones(10, dtype=bool)
  for trial in range(300):
    seg = rng.randint(0, 10, size=20)
    walk = pretrain_examples.sample_mask(seg, is_start, None, 1, 1,
                                         np.random.RandomState(trial))
    assert not walk[-1]  # a span ending at the part's end is not taken
    for goal in (0, 3, 11, 20):
      m = pretrain_examples.sample_mask(seg, is_start, goal, 6, 1,
                                        np.random.RandomState(trial))
      assert m.sum() == goal
    fwd = pretrain_examples.sample_mask(seg[::-1], is_start, 5, 2, 1,
                                        np.random.RandomState(trial))
    bwd = pretrain_examples.sample_mask(seg, is_start, 5, 2, 1,
                                        np.random.RandomState(trial),
                                        reverse=True)
    assert np.array_equal(bwd, fwd[::-1])


def test_word_start_table(tiny_spm):
  sp = spm.SentencePieceProcessor(model_file=tiny_spm)
  table = pretrain_examples.word_start_table(sp)
  for i in range(sp.get_piece_size()):
    piece = sp.id_to_piece(i)
    want = (piece[0] in ("\u2581", "<") or
            (len(piece) == 1 and piece in '!"#$%&()*+,-./:;?@[\\]^_`{|}~'))
    assert table[i] == want, piece
  assert table[sp.piece_to_id("<sep>")] and table[sp.piece_to_id(",")]
  assert not table[sp.piece_to_id("s")]
