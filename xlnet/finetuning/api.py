"""Fine-tuning from Python: classification/regression, SQuAD, RACE and
tagging with typed settings, no command-line flags (docs/python_api.md,
"Fine-tuning").

  run_classifier(task, model, engine, do_train, do_eval, do_predict)
  run_squad(task, model, engine, do_prepro, do_train, do_predict)
  run_race(task, model, engine, do_train, do_eval)
  run_ner(task, model, engine, do_train, do_eval, do_predict)
  load_classifier(model_dir)  a fine-tuned classifier from its model_dir,
                              predicting texts in memory
  load_tagger(model_dir)      a fine-tuned tagger, tagging sentences
  extract_features(config)    texts -> vectors from a checkpoint
                              (extract_features.py)

`task` is a `ClassifierConfig`, `SquadConfig`, `RaceConfig` or
`TaggingConfig` (`xlnet/finetuning/tagging/config.py`), `model` a
`ModelConfig` and `engine` an `EngineConfig` (`xlnet/finetuning/config.py`;
the optimizer, batch layout, checkpoints, loop and devices come from
`xlnet/training/config.py`). The programs `run_classifier.py`,
`run_squad.py`, `run_race.py` and `run_ner.py` resolve their flags into
these and call the same functions.

Over several hosts (`engine.device.worker_hosts`, or TF_CONFIG) every
process calls the same function: all train; the chief alone writes the
feature records (the others wait up to `task.records_timeout` seconds for
them), evaluates, predicts and writes the results, after training, while
the others wait for it (docs/distributed.md).
"""
import functools
import os

from xlnet.data import prepro_utils
from xlnet.finetuning import config as finetune_config
from xlnet.finetuning import finetune
from xlnet.finetuning import qa_records
from xlnet.finetuning.classifier import features as classifier_features
from xlnet.finetuning.classifier import loaded_model
from xlnet.finetuning.classifier import task as classifier_task
from xlnet.finetuning.long_documents import settings as long_documents
from xlnet.finetuning.race import features as race_features
from xlnet.finetuning.race import task as race_task
from xlnet.finetuning.squad import features as squad_features
from xlnet.finetuning.squad import task as squad_task
from xlnet.finetuning.tagging import features as tagging_features
from xlnet.finetuning.tagging import head as tagging_head
from xlnet.finetuning.tagging import loaded_model as tagging_loaded
from xlnet.finetuning.tagging import task as tagging_task
from xlnet.finetuning.vectors import extract as vectors_extract
from xlnet.training import checkpoint_io


def run_classifier(task, model, engine, do_train=False, do_eval=False,
                   do_predict=False):
  """Prepares the records, then fine-tunes, evaluates and predicts.

  Args:
    task: a `ClassifierConfig`.
    model: a `ModelConfig`.
    engine: an `EngineConfig` (optimizer and layout needed with do_train).
    do_train: fine-tune from init_checkpoint into model_dir.
    do_eval: evaluate the latest (every, with eval_all_ckpt) checkpoint on
      eval_split into model_dir/eval_results.txt.
    do_predict: write the predictions of eval_split to predict_dir.

  Returns:
    dict with, as asked, `train`: list of (step, loss); `eval`: list of
    (checkpoint, metrics dict); `predict`: the paths written.

  Raises:
    ValueError: one line naming the setting or file at fault (first: the
      configs disagreeing, `config.check_together`).
  """
  finetune_config.check_together(model, engine)
  sp_model = prepro_utils.load_sp_model(task.spiece_model_file,
                                        "--spiece_model_file")
  if (do_eval or do_predict) and not finetune.runs_here(
      engine.device, "evaluation and prediction"):
    do_eval = do_predict = False
  processor = classifier_task.make_task_processor(task)
  labels = processor.get_labels()
  n_class = None if labels is None else len(labels)
  if do_eval:
    classifier_task.check_eval_split(task, processor)
  long_documents.check_single_texts(task.long_document_settings,
                                    processor.pairs,
                                    f"--task_name={task.task_name}")
  layout = classifier_task.record_layout(task)
  head = classifier_task.head_fn(task, model, n_class)
  if do_train and engine.checkpoint.init_checkpoint:
    classifier_task.check_init_checkpoint(
        engine.checkpoint.init_checkpoint, task.max_seq_length, head,
        processor.is_regression, layout)
    finetune.warn_if_init_head_differs(engine.checkpoint.init_checkpoint,
                                       model.head_record())
  prepare = functools.partial(
      classifier_features.prepare_records, processor, task.data_dir,
      output_dir=task.output_dir, max_seq_length=task.max_seq_length,
      sp_model=sp_model, spiece_model_file=task.spiece_model_file,
      uncased=task.uncased, overwrite=task.overwrite_data, layout=layout)
  # Every split's records exist before the (long) training starts; the
  # training examples in an order seeded by the run's seed, so a rerun
  # writes the same records.
  if do_train:
    train_file, _ = prepare("train", shuffle_seed=engine.seed,
                            wait=finetune.records_wait(engine.device,
                                                       task.records_timeout))
  if do_eval or do_predict:
    eval_records = prepare(task.eval_split)
    # A multi-label threshold chosen on dev reads the dev split too.
    dev_records = (prepare("dev") if classifier_task.needs_dev_records(task)
                   else None)
  out = {}
  if do_train:
    out["train"] = classifier_task.train(
        engine, classifier_features.input_fn_builder(
            train_file, task.max_seq_length, True, processor.is_regression,
            shuffle_buffer=task.shuffle_buffer, seed=engine.seed,
            n_labels=classifier_task.n_labels_of(processor),
            layout=layout), head,
        model.head_record(), finetune_config.ModelRecord(
            model.xlnet_config, classifier_task.task_record(
                task, model, labels, processor.pairs),
            task.spiece_model_file))
  with finetune.chief_alone():
    # The checkpoints evaluated, or predicted with, pool as this run's head.
    if do_eval:
      finetune.check_head(engine.model_dir, model.head_record())
    if do_predict:
      ckpt_dir = engine.model_dir
      if task.predict_ckpt:
        ckpt_dir = os.path.dirname(checkpoint_io.resolve_checkpoint(
            task.predict_ckpt, "--predict_ckpt"))
      finetune.check_head(ckpt_dir, model.head_record())
    if do_eval:
      with finetune.inference_memory(engine, "evaluating",
                                     "eval_batch_size", task.eval_batch_size):
        out["eval"] = classifier_task.evaluate(task, engine, processor,
                                               *eval_records, head,
                                               dev_records)
    if do_predict:
      with finetune.inference_memory(engine, "predicting",
                                     "predict_batch_size",
                                     task.predict_batch_size):
        out["predict"] = classifier_task.predict(task, engine, processor,
                                                 *eval_records, head,
                                                 dev_records)
  return out


def run_squad(task, model, engine, do_prepro=False, do_train=False,
              do_predict=False, seed=None):
  """Writes the window records, fine-tunes, predicts and evaluates.

  Args:
    task: a `SquadConfig`.
    model: a `ModelConfig` (None with do_prepro alone).
    engine: an `EngineConfig` (None with do_prepro alone; optimizer and
      layout needed with do_train).
    do_prepro: write the training records of shard task.proc_id.
    do_train: fine-tune on the training records (written here when
      missing and task.num_proc is 1).
    do_predict: predict task.predict_file with the latest (every, with
      eval_all_ckpt) checkpoint and evaluate.
    seed: with do_prepro and no engine, the run's seed that orders the
      training records (the later training's `TrainConfig.seed`; None: the
      programs' default). With an engine its `TrainConfig.seed` is the seed
      and this stays None.

  Returns:
    the latest checkpoint's metrics with do_predict, else None.
  """
  finetune_config.check_together(model, engine)
  seed = finetune_config.run_seed(engine, seed)
  sp_model = prepro_utils.load_sp_model(task.spiece_model_file,
                                        "--spiece_model_file")
  if do_prepro:
    squad_task.prepro_train_shard(task, sp_model, task.proc_id,
                                  task.num_proc, seed=seed)
  if do_predict and not finetune.runs_here(engine.device, "prediction"):
    do_predict = False
  if do_train:
    input_fn = qa_records.make_input_fn(
        squad_task.train_record_paths(task, sp_model, finetune.records_wait(
            engine.device, task.records_timeout), seed=seed),
        squad_features.feature_spec(task.max_seq_length, is_training=True),
        is_training=True, drop_remainder=True,
        shuffle_buffer=task.shuffle_buffer, seed=seed)
    finetune.train(engine, input_fn, squad_task.loss_fn(model),
                   allow_missing=squad_task.NEW_VARIABLE_PATTERNS,
                   record=finetune_config.ModelRecord(
                       model.xlnet_config,
                       spiece_model_file=task.spiece_model_file))
  with finetune.chief_alone():
    if not do_predict:
      return None
    paragraphs, examples, converter, path = squad_task.prepro_predict(
        task, sp_model)
    input_fn = qa_records.make_input_fn(
        [path], squad_features.feature_spec(task.max_seq_length,
                                            is_training=False),
        is_training=False, drop_remainder=False)
    with finetune.inference_memory(engine, "predicting",
                                   "predict_batch_size",
                                   task.predict_batch_size):
      return squad_task.evaluate_checkpoints(
          task, model, engine, (paragraphs, examples, converter), input_fn)


def run_race(task, model, engine, do_train=False, do_eval=False):
  """Fine-tunes on RACE and scores eval_split.

  Args:
    task: a `RaceConfig`.
    model: a `ModelConfig`.
    engine: an `EngineConfig` (optimizer and layout needed with do_train).
    do_train: fine-tune on {data_dir}/train.
    do_eval: score {data_dir}/{eval_split} with the latest checkpoint and
      write model_dir/eval_results_{eval_split}.json.

  Returns:
    the accuracies (middle, high, all) with do_eval, else None.
  """
  finetune_config.check_together(model, engine)
  sp_model = prepro_utils.load_sp_model(task.spiece_model_file,
                                        "--spiece_model_file")
  spec = race_features.feature_spec(task.max_seq_length)
  if do_train:
    if engine.checkpoint.init_checkpoint:
      finetune.warn_if_init_head_differs(engine.checkpoint.init_checkpoint,
                                         model.head_record())
    _, path = race_task.prepro(task, sp_model, "train", finetune.records_wait(
        engine.device, task.records_timeout), seed=engine.seed)
    input_fn = qa_records.make_input_fn(
        [path], spec, is_training=True, drop_remainder=True,
        shuffle_buffer=task.shuffle_buffer, seed=engine.seed)
    finetune.train(engine, input_fn, race_task.loss_fn(model),
                   allow_missing=race_task.NEW_VARIABLE_PATTERNS,
                   head=model.head_record(), record=finetune_config.ModelRecord(
                       model.xlnet_config,
                       spiece_model_file=task.spiece_model_file))
  with finetune.chief_alone():
    if not do_eval or not finetune.runs_here(engine.device, "evaluation"):
      return None
    finetune.check_head(engine.model_dir, model.head_record())
    examples, path = race_task.prepro(task, sp_model, task.eval_split)
    with finetune.inference_memory(engine, "evaluating", "eval_batch_size",
                                   task.eval_batch_size):
      results = race_task.predict(task, model, engine,
                                  qa_records.make_input_fn(
                                      [path], spec, is_training=False,
                                      drop_remainder=False))
    metrics = race_features.accuracy_by_level(examples, results)
    race_task.write_eval_results(task, engine.model_dir, metrics)
    return metrics


def load_classifier(model_dir, checkpoint=None):
  """The classifier (or regression head) fine-tuned into `model_dir`, ready
  to predict: `.predict(texts)` -> dict of NumPy `logits`,
  `probabilities` and `labels` (a multi-label classifier's: label sets),
  the numbers `run_classifier`'s prediction writes
  (`xlnet/finetuning/classifier/loaded_model.py`).

  Args:
    model_dir: a fine-tuned classifier's directory (its config.json,
      task.json, head.json and spiece.model are read).
    checkpoint: a prefix or directory (its newest), or None: model_dir's
      newest.

  Returns:
    a `loaded_model.Classifier`.
  """
  return loaded_model.load(model_dir, checkpoint)


def run_ner(task, model, engine, do_train=False, do_eval=False,
            do_predict=False):
  """Fine-tunes a tagger, scores task.eval_file and tags
  task.file_to_predict.

  Args:
    task: a `TaggingConfig`.
    model: a `ModelConfig` (its summary settings are unused: the head
      reads every position).
    engine: an `EngineConfig` (optimizer and layout needed with do_train).
    do_train: fine-tune on task.train_file from init_checkpoint into
      model_dir.
    do_eval: score task.eval_file with the latest (every, with
      eval_all_ckpt) checkpoint into model_dir/eval_results.txt and
      eval_results_{file name}.json.
    do_predict: write task.file_to_predict with each token's predicted tag
      to task.predict_dir.

  Returns:
    dict with, as asked, `train`: list of (step, loss); `eval`: list of
    (checkpoint, conlleval's figures); `predict`: the path written.

  Raises:
    ValueError: one line naming the setting, or the file and line, at
      fault.
  """
  finetune_config.check_together(model, engine)
  sp_model = prepro_utils.load_sp_model(task.spiece_model_file,
                                        "--spiece_model_file")
  encoder = tagging_features.Encoder(sp_model, task.uncased)
  if (do_eval or do_predict) and not finetune.runs_here(
      engine.device, "evaluation and prediction"):
    do_eval = do_predict = False
  out = {}
  if not do_train:
    labels, scheme = tagging_task.recorded_tags(task, engine.model_dir)
  else:
    train = tagging_task.read(task, task.train_file)
    labels, scheme = tagging_task.resolve_labels(task, train)
    path, _ = tagging_task.prepare_train_records(
        task, encoder, train, labels, engine.seed,
        finetune.records_wait(engine.device, task.records_timeout))
    out["train"] = finetune.train(
        engine, qa_records.make_input_fn(
            [path], tagging_task.feature_spec(task.max_seq_length),
            is_training=True, drop_remainder=True,
            shuffle_buffer=task.shuffle_buffer, seed=engine.seed),
        tagging_task.loss_fn(model, len(labels)),
        allow_missing=tagging_head.NEW_VARIABLE_PATTERNS,
        record=finetune_config.ModelRecord(
            model.xlnet_config, tagging_task.task_record(task, model, labels,
                                                         scheme),
            task.spiece_model_file))
  with finetune.chief_alone():
    if do_eval:
      with finetune.inference_memory(engine, "evaluating", "eval_batch_size",
                                     task.eval_batch_size):
        out["eval"] = tagging_task.evaluate(task, model, engine, encoder,
                                            labels, scheme)
    if do_predict:
      with finetune.inference_memory(engine, "predicting",
                                     "predict_batch_size",
                                     task.predict_batch_size):
        out["predict"] = tagging_task.predict(task, model, engine, encoder,
                                              labels, scheme)
  return out


def load_tagger(model_dir, checkpoint=None):
  """The tagger fine-tuned into `model_dir`, ready to tag sentences:
  `.predict(sentences)` -> a list of tag lists, one tag per word
  (`xlnet/finetuning/tagging/loaded_model.py`).

  Args:
    model_dir: a fine-tuned tagger's directory (its config.json,
      task.json and spiece.model are read).
    checkpoint: a prefix or directory (its newest), or None: model_dir's
      newest.

  Returns:
    a `loaded_model.Tagger`.
  """
  return tagging_loaded.load(model_dir, checkpoint)


def extract_features(config):
  """Writes the vectors of a file's texts from a released, pretrained or
  fine-tuned checkpoint (`xlnet/finetuning/vectors/`, docs/features.md).

  Args:
    config: a `vectors.config.VectorsConfig` (the texts, the checkpoint,
      the layers and pooling, the output file).

  Returns:
    the number of texts.
  """
  return vectors_extract.extract_features(config)
