"""reproduce.py's settings as one typed config (`ReproduceConfig`), for
`api.run_table` and `api.plan_table`; its flags are the fields' names."""
import dataclasses
from typing import Optional, Tuple

from xlnet import validation
from xlnet.reproduce import paper_settings
from xlnet.training import config as train_config_lib


@dataclasses.dataclass(frozen=True)
class ReproduceConfig:
  """What reproduce.py runs (`xlnet/reproduce/api.py`); every field
  is the flag of its name, the overrides (train_steps ... max_query_length)
  None for each task's own setting. Its values are checked when it is
  built (a table, when given, one of the paper's); `plan_table` and
  `run_table` check what a run needs besides (a table, the paths, where
  the TPU writes)."""
  table: Optional[str] = None
  model_size: str = validation.first_choice("model_size")
  tasks: Optional[Tuple[str, ...]] = None
  init_checkpoint: Optional[str] = None
  model_config_path: Optional[str] = None
  spiece_model_file: Optional[str] = None
  uncased: bool = False
  data_root: Optional[str] = None
  work_dir: Optional[str] = None
  num_core_per_host: int = 1
  use_tpu: bool = False
  num_hosts: int = 1
  tpu: Optional[str] = None
  worker_hosts: Optional[str] = None
  task_index: int = 0
  cluster_timeout: float = train_config_lib.CLUSTER_TIMEOUT
  gcs_dir: Optional[str] = None
  eval_batch_size: int = 8
  seed: Optional[int] = None
  num_seeds: Optional[int] = None
  accum_steps: Optional[int] = None
  device_memory_gb: Optional[float] = None
  memory_calibration: Optional[str] = None
  use_fp16: bool = False
  use_bfloat16: bool = False
  recompute: bool = False
  freeze_layers: int = 0
  num_proc: int = 8
  dry_run: bool = False
  train_steps: Optional[int] = None
  max_seq_length: Optional[int] = None
  train_batch_size: Optional[int] = None
  learning_rate: Optional[float] = None
  warmup_steps: Optional[int] = None
  save_steps: Optional[int] = None
  iterations: Optional[int] = None
  max_qa_length: Optional[int] = None
  max_query_length: Optional[int] = None

  def __post_init__(self):
    validation.check_fields(self)
    if self.table is not None:
      paper_settings.check_table(self.table)
    validation.check_precision(self.use_tpu, self.use_bfloat16, self.use_fp16)
    if self.use_bfloat16 and self.use_tpu:
      raise ValueError("--use_bfloat16 is implied by --use_tpu (TPUs compute "
                       "in bfloat16); drop it")
    if self.learning_rate is not None and not self.learning_rate > 0:
      # An override: every task trains, so a rate of 0 is no setting.
      raise ValueError(f"--learning_rate={self.learning_rate} must be > 0")
    if self.memory_calibration and self.device_memory_gb is None:
      raise ValueError(f"--memory_calibration={self.memory_calibration} "
                       "needs --device_memory_gb (the memory it plans for)")
    if self.device_memory_gb is not None and self.accum_steps is not None:
      raise ValueError("--accum_steps and --device_memory_gb exclude each "
                       "other: give the accumulation, or the memory to plan "
                       "it from")
