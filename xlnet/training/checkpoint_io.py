"""Name-based checkpoints: atomic writes, integrity checks, retention.

Checkpoints are ordinary TensorFlow V2 bundles (`{prefix}.index` +
`{prefix}.data-0000k-of-0000n`) whose tensors carry the released variable
names (`model/transformer/...`), so `tf.train.load_checkpoint`, the released
tools and `tf.compat.v1.train.init_from_checkpoint` read them as they read the
released checkpoints.

Writing is atomic: every writer (one per worker) saves a shard under a
temporary prefix, one writer merges the shards into one bundle under another
temporary prefix, renames the data files and then the index to the final
prefix, and updates the `checkpoint` state file last. A reader sees either
the whole checkpoint or none of it; a kill leaves only temporary files or
data files without an index, which the next run removes
(`clean_model_dir`).

The checkpoints of a model directory are found by listing `model.ckpt-N.index`
files, so `--max_save` bounds them across restarts and a deleted or damaged
newest checkpoint is noticed (`checkpoint_resume.find_resume_checkpoint`);
`resolve_checkpoint` turns what a user names (a prefix, a directory,
DIR/latest) into a prefix.
"""
import os
import re

from absl import logging
import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context as tf_context  # pylint: disable=g-direct-tensorflow-import

from xlnet import errors
from xlnet import gfile_io
from xlnet import io_utils
from xlnet import signals

CKPT_BASENAME = "model.ckpt"
STATE_FILE = "checkpoint"
_STEP_RE = re.compile(r"^model\.ckpt-(\d+)\.index$")
_DATA_RE = re.compile(r"^model\.ckpt-\d+\.data-\d{5}-of-\d{5}$")


class CheckpointError(ValueError):
  """A checkpoint or a model directory that cannot be used as it is."""


def checkpoint_prefix(model_dir, step):
  """`{model_dir}/model.ckpt-{step}`."""
  return os.path.join(model_dir, f"{CKPT_BASENAME}-{int(step)}")


def variable_name(var):
  """A graph variable's checkpoint name: its name without the `:0` output
  suffix."""
  return re.sub(r":\d+$", "", var.name)


def describe_names(names, first=5):
  """`N (first, ...)`, for messages about lists of variables."""
  shown = ", ".join(names[:first])
  return f"{len(names)} ({shown}{', ...' if len(names) > first else ''})"


def step_of(prefix):
  """The step N of a `.../model.ckpt-N` prefix, or None."""
  match = _STEP_RE.match(os.path.basename(prefix) + ".index")
  return int(match.group(1)) if match else None


def list_checkpoints(model_dir):
  """Checkpoints with an index file in `model_dir`, oldest first.

  Returns:
    list of (step, prefix).
  """
  found = []
  for path in tf.io.gfile.glob(os.path.join(
      gfile_io.glob_escape(model_dir), f"{CKPT_BASENAME}-*.index")):
    match = _STEP_RE.match(os.path.basename(path))
    if match:
      found.append((int(match.group(1)), path[:-len(".index")]))
  return sorted(found)


def read_state_file(model_dir):
  """The checkpoint prefixes listed in `{model_dir}/checkpoint`.

  Returns:
    (latest prefix or None, list of all listed prefixes); (None, []) when
    there is no state file.

  Raises:
    CheckpointError: when the state file exists but cannot be parsed.
  """
  path = os.path.join(model_dir, STATE_FILE)
  if not tf.io.gfile.exists(path):
    return None, []
  try:
    state = tf.train.get_checkpoint_state(model_dir)
  except errors.Stop:
    raise  # SIGTERM (errors.Terminated) arrived while reading: not a bad file
  except Exception as e:  # text_format.ParseError and friends
    raise CheckpointError(f"{path} is not a valid checkpoint state file "
                          f"({' '.join(str(e).split())})") from None
  if state is None:
    return None, []

  def absolute(p):
    return p if os.path.isabs(p) or "://" in p else os.path.join(model_dir, p)

  listed = [absolute(p) for p in state.all_model_checkpoint_paths]
  latest = absolute(state.model_checkpoint_path) \
      if state.model_checkpoint_path else None
  return latest, listed


def data_files(prefix):
  """The data files of the bundle `prefix` that exist."""
  return sorted(tf.io.gfile.glob(gfile_io.glob_escape(prefix) +
                                 ".data-?????-of-?????"))


def read_tensors(prefix, names=None):
  """Reads tensors of a checkpoint, checking that every one is readable.

  Args:
    prefix: checkpoint prefix.
    names: names to read (None: all).

  Returns:
    dict name -> np.ndarray.

  Raises:
    CheckpointError: naming the file when the index is missing or damaged,
      a data file is missing or truncated, or a name is absent.
  """
  index = prefix + ".index"
  if not tf.io.gfile.exists(index):
    raise CheckpointError(f"{index} is missing")
  try:
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
  except errors.Stop:
    raise  # SIGTERM (errors.Terminated) arrived while reading: not a bad file
  except Exception as e:  # OpError, or a damaged index file
    raise CheckpointError(f"{index} cannot be read "
                          f"({errors.error_text(e)[:300]})") from None
  wanted = sorted(shapes) if names is None else list(names)
  missing = [n for n in wanted if n not in shapes]
  if missing:
    raise CheckpointError(f"{prefix} lacks {len(missing)} variable(s), e.g. "
                          f"{missing[:3]}")
  values, dtypes = {}, reader.get_variable_to_dtype_map()
  for name in wanted:
    _check_room(prefix, name, shapes[name], dtypes[name])
    try:
      values[name] = reader.get_tensor(name)
      signals.raise_if_terminated()  # a SIGTERM get_tensor's C++ swallowed
    except errors.Stop:
      raise  # SIGTERM (errors.Terminated) arrived while reading: not a bad file
    except Exception as e:  # OpError, or IndexError for a short data file
      files = data_files(prefix) or [prefix + ".data-*"]
      raise CheckpointError(
          f"{', '.join(files)}: cannot read {name} "
          f"({errors.error_text(e)[:300]}); the data file is missing, "
          "truncated or corrupt") from None
  return values


def _check_room(prefix, name, shape, dtype):
  """Raises a one-line `errors.Stop` unless TensorFlow's CPU allocator has
  room for the tensor `name` of `prefix`: once TensorFlow's devices exist
  the reader takes its memory there without checking the allocation (a
  segmentation fault in a small pool, TF_CPU_BFC_MEM_LIMIT_IN_MB=1, left
  the run lock behind); an op's allocation raises instead."""
  with tf.init_scope():
    devices = tf_context.context()._context_handle  # pylint: disable=protected-access
    if dtype == tf.string or not tf.executing_eagerly() or devices is None:
      return  # (before TensorFlow's devices exist it allocates elsewhere)
    try:
      with tf.device("/cpu:0"):
        tf.raw_ops.Empty(shape=shape, dtype=dtype, init=False)
    except tf.errors.ResourceExhaustedError:
      raise errors.Stop(
          f"out of memory reading {prefix}: {name} ({dtype.name} {shape}) "
          "does not fit in the memory left for tensors; the checkpoint is "
          "intact: free memory (or raise TF_CPU_BFC_MEM_LIMIT_IN_MB) and "
          "rerun") from None


def init_ops(variables, prefix=None):
  """Ops that give a graph's `variables` their values: those of the same
  names in checkpoint `prefix` (read and checked by `read_tensors`), or,
  with no prefix, their initializers. For inference graphs built by hand.

  Returns:
    an op or a list of ops, to `session.run`.
  """
  if prefix is None:
    return tf.compat.v1.variables_initializer(variables)
  values = read_tensors(prefix, sorted(v.op.name for v in variables))
  return [v.assign(values[v.op.name]) for v in variables]

def verify(prefix):
  """None when every tensor of `prefix` is readable, else the problem."""
  try:
    read_tensors(prefix)
  except CheckpointError as e:
    return str(e)
  return None


def _run_op(make_op, feed=()):
  """Runs the op `make_op(inputs)` now, eagerly when the process allows it
  (also from inside a graph context), else in a throw-away graph session.

  Args:
    make_op: callable(list of input tensors) -> op.
    feed: list of arrays (or eager tensors) given as the inputs.
  """
  with tf.init_scope():
    if tf.executing_eagerly():
      with tf.device("/cpu:0"):
        make_op([tf.convert_to_tensor(v) for v in feed])
      return
  with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
    placeholders = [tf.compat.v1.placeholder(tf.as_dtype(np.asarray(v).dtype),
                                             np.shape(v)) for v in feed]
    sess.run(make_op(placeholders),
             dict(zip(placeholders, [np.asarray(v) for v in feed])))


def save_shard(tmp_prefix, values):
  """Writes one shard (a bundle of its own) under a temporary prefix.

  Args:
    tmp_prefix: where to write; made with `shard_prefix`.
    values: dict name -> tensor or array.
  """
  names = sorted(values)
  _run_op(lambda tensors: tf.raw_ops.SaveV2(
      prefix=tmp_prefix, tensor_names=names,
      shape_and_slices=[""] * len(names), tensors=tensors),
          [values[n] for n in names])


def shard_prefix(final_prefix, shard, attempt):
  """Temporary prefix of shard `shard` of one save attempt (a str token
  shared by every writer of that save, e.g. the step and the chief's pid)."""
  return f"{final_prefix}{io_utils.TMP_MARK}{attempt}-shard{shard}"


def publish(final_prefix, shard_prefixes, model_dir, max_save=None):
  """Merges written shards into `final_prefix` and makes it visible.

  Order: merge into a temporary bundle, rename its data files, then its index
  (a prefix is a checkpoint once its index exists), then rewrite the state
  file; finally delete the oldest checkpoints beyond `max_save`.

  Args:
    final_prefix: e.g. `{model_dir}/model.ckpt-1000`.
    shard_prefixes: temporary prefixes written by `save_shard`.
    model_dir: the directory holding the state file.
    max_save: keep at most this many checkpoints (None or <= 0: all).
  """
  merged = final_prefix + io_utils.TMP_MARK + "merged"
  for path in tf.io.gfile.glob(gfile_io.glob_escape(merged) + "*"):
    io_utils.remove_quietly(path)
  _run_op(lambda _: tf.raw_ops.MergeV2Checkpoints(
      checkpoint_prefixes=list(shard_prefixes), destination_prefix=merged,
      delete_old_dirs=False))
  for path in data_files(final_prefix) + [final_prefix + ".index"]:
    io_utils.remove_quietly(path)  # an older save of the same step
  for path in data_files(merged):
    tf.io.gfile.rename(path, final_prefix + path[len(merged):],
                       overwrite=True)
  tf.io.gfile.rename(merged + ".index", final_prefix + ".index",
                     overwrite=True)
  for prefix in shard_prefixes:  # MergeV2 moved the data; drop leftovers
    for path in tf.io.gfile.glob(gfile_io.glob_escape(prefix) + "*"):
      io_utils.remove_quietly(path)
  kept = prune(model_dir, max_save)
  write_state_file(model_dir, final_prefix, kept)


def write_checkpoint(final_prefix, values, model_dir=None, max_save=None):
  """Writes `values` (name -> array) as one checkpoint, atomically.

  Returns:
    final_prefix.
  """
  model_dir = model_dir or os.path.dirname(final_prefix)
  tf.io.gfile.makedirs(model_dir)
  tmp = shard_prefix(final_prefix, 0, f"{os.getpid()}")
  try:
    save_shard(tmp, values)
    publish(final_prefix, [tmp], model_dir, max_save)
  except (tf.errors.OpError, OSError) as e:
    raise save_failure(final_prefix, e) from None
  except BaseException:
    remove_temporaries(model_dir, os.path.basename(final_prefix))
    raise
  return final_prefix


def save_failure(final_prefix, err):
  """What to raise after writing `final_prefix` failed with `err`, once the
  failed save's files are removed (the newest checkpoint stays loadable).

  Returns:
    an `io_utils.ResourceError` (one line: the path, the cause, the newest
    intact checkpoint) when `err` is a resource failure (no space, file too
    large, read-only, permission), else `err` itself.
  """
  model_dir = os.path.dirname(final_prefix)
  remove_temporaries(model_dir, os.path.basename(final_prefix))
  if not tf.io.gfile.exists(final_prefix + ".index"):
    for path in data_files(final_prefix):
      io_utils.remove_quietly(path)
  found = list_checkpoints(model_dir)
  safe = (f"{os.path.basename(found[-1][1])} is intact; fix the cause and "
          "rerun the same command to resume from it" if found else
          "no checkpoint was written yet; fix the cause and rerun")
  return io_utils.resource_error(final_prefix, err, safe) or err


def write_state_file(model_dir, latest_prefix, all_prefixes):
  """Atomically writes `{model_dir}/checkpoint` (relative paths)."""
  def rel(p):
    return os.path.basename(p) if os.path.dirname(p) == model_dir.rstrip(
        "/") else p
  paths = list(all_prefixes)
  if latest_prefix not in paths:
    paths.append(latest_prefix)
  lines = [f'model_checkpoint_path: "{rel(latest_prefix)}"']
  lines += [f'all_model_checkpoint_paths: "{rel(p)}"' for p in paths]
  io_utils.atomic_write(os.path.join(model_dir, STATE_FILE),
                        "\n".join(lines) + "\n")


def delete_checkpoint(prefix):
  """Removes a checkpoint: its index first (so it stops being one), then
  its data files; a kill in between leaves data files without an index,
  which `remove_orphans` deletes at the next start."""
  io_utils.remove_quietly(prefix + ".index")
  for path in data_files(prefix):
    io_utils.remove_quietly(path)


def prune(model_dir, max_save):
  """Deletes the oldest `model.ckpt-N` beyond `max_save`; returns the kept
  prefixes, oldest first."""
  found = [p for _, p in list_checkpoints(model_dir)]
  if max_save and max_save > 0 and len(found) > max_save:
    for prefix in found[:-max_save]:
      delete_checkpoint(prefix)
    found = found[-max_save:]
  return found


def remove_temporaries(model_dir, basename=CKPT_BASENAME):
  """Removes temporary files of interrupted saves (`{basename}*.tmp-*`)."""
  pattern = os.path.join(gfile_io.glob_escape(model_dir),
                         gfile_io.glob_escape(basename) + "*" +
                         io_utils.TMP_MARK + "*")
  stale = tf.io.gfile.glob(pattern)
  for path in stale:
    io_utils.remove_quietly(path)
  return stale


def remove_orphans(model_dir):
  """Removes `model.ckpt-N.data-*` files whose `model.ckpt-N.index` is
  missing: what a kill leaves while a checkpoint is deleted (index first)
  or published (data renamed before the index). Such files are never part
  of a checkpoint. Call it only while no save runs in `model_dir` (the
  trainer holds the directory's run lock).

  Returns:
    list of the removed paths.
  """
  pattern = os.path.join(gfile_io.glob_escape(model_dir),
                         f"{CKPT_BASENAME}-*.data-?????-of-?????")
  orphans = [path for path in tf.io.gfile.glob(pattern)
             if _DATA_RE.match(os.path.basename(path)) and
             not tf.io.gfile.exists(path[:path.rindex(".data-")] + ".index")]
  for path in orphans:
    io_utils.remove_quietly(path)
  return orphans


def clean_model_dir(model_dir):
  """Removes what killed runs left in `model_dir`: temporary files of
  saves and orphaned data files (see `remove_orphans`).

  Returns:
    list of the removed paths.
  """
  removed = remove_temporaries(model_dir) + remove_orphans(model_dir)
  for path in removed:
    logging.warning("Removed %s (left by a killed run)", path)
  return removed


def resolve_checkpoint(path, flag_name="checkpoint"):
  """Turns a checkpoint prefix, a directory or `{dir}/latest` into a prefix.

  Args:
    path: str, a checkpoint prefix (`.../model.ckpt-1000`), a directory or a
      path ending in `latest` (both meaning the directory's latest checkpoint).
    flag_name: str, the flag the path came from, for error messages.

  A directory gives its newest intact checkpoint (see `newest_readable`):
  readers evaluate, predict or convert what is there, saying so when a
  newer checkpoint is missing or damaged (training instead refuses to
  resume, `checkpoint_resume.find_resume_checkpoint`).

  Returns:
    str, an existing checkpoint prefix.

  Raises:
    ValueError: when no checkpoint exists there (CheckpointError: none of
      those a directory names is intact).
  """
  ckpt_dir = None
  if os.path.basename(path.rstrip("/")) == "latest":
    ckpt_dir = os.path.dirname(path.rstrip("/")) or "."
  elif tf.io.gfile.isdir(path):
    ckpt_dir = path
  if ckpt_dir is not None:
    prefix = newest_readable(ckpt_dir, f"{flag_name}={path}")
    if prefix is None:
      what = ("holds no checkpoint" if tf.io.gfile.isdir(ckpt_dir) else
              "does not exist")
      raise ValueError(f"{flag_name}={path}: directory {ckpt_dir} {what}; "
                       "train first, or give a checkpoint prefix")
    return prefix
  if not tf.io.gfile.exists(path + ".index"):
    if not tf.io.gfile.exists(path):
      raise ValueError(f"{flag_name}={path}: not a checkpoint (no "
                       f"{path}.index) and no such directory: nothing was "
                       "saved there; train first, or give a checkpoint "
                       "prefix, a directory or DIR/latest")
    raise ValueError(f"{flag_name}={path}: not a checkpoint (no {path}.index); "
                     "give a checkpoint prefix, a directory or DIR/latest")
  return path


def newest_readable(ckpt_dir, what):
  """The newest intact checkpoint of `ckpt_dir` for a reader, or None when
  the directory names none; a newer one that is missing or damaged is
  skipped with a warning (`what`: the flag and value, for it). Reads only.

  Raises:
    CheckpointError: it names checkpoints but none is intact.
  """
  skipped = []
  for prefix in _named_checkpoints(ckpt_dir):
    problem = (verify(prefix) if tf.io.gfile.exists(prefix + ".index") else
               f"{prefix}.index is missing")
    if problem is None:
      if skipped:
        logging.warning("%s: reading %s, the newest intact checkpoint of %s "
                        "(skipped: %s)", what, os.path.basename(prefix),
                        ckpt_dir, "; ".join(skipped))
      return prefix
    skipped.append(problem)
  if skipped:
    raise CheckpointError(f"{what}: {ckpt_dir} holds no intact checkpoint "
                          f"({'; '.join(skipped)})")
  return None


def _named_checkpoints(ckpt_dir):
  """The checkpoints `ckpt_dir` names, newest first: its `model.ckpt-N` (an
  index file, or the state file's latest) by step, then the others its
  state file lists (other names, e.g. a converted release): its latest,
  then the rest, newest first."""
  found = list_checkpoints(ckpt_dir)
  try:
    latest, listed = read_state_file(ckpt_dir)
  except CheckpointError:
    if not found:
      raise
    latest, listed = None, []  # model.ckpt-N files say enough
  stepped = dict(found)
  others = []
  for prefix in [latest] + listed[::-1]:
    step = step_of(prefix) if prefix else None
    if step is not None:
      stepped.setdefault(step, prefix)
    elif prefix and prefix not in others:
      others.append(prefix)
  return [stepped[s] for s in sorted(stepped, reverse=True)] + others
