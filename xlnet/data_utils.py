"""XLNet pretraining data, under the names of the original release.

The work is done by modules named after what they hold:
  token_stream       text files -> token stream with sentence ids -> rows
  pretrain_examples  rows -> examples (A/B segments, span masks)
  example_proto      examples -> tf.train.Example bytes
  record_writer      the record-creation run and its command line
  record_format      file names, record/corpus infos, integrity checks
  input_pipeline     records -> permuted two-stream features (get_input_fn)
This module re-exports the public names users of the release call, so
`from xlnet import data_utils; data_utils.get_input_fn(...)` and
`python data_utils.py ...` keep working. See docs/data.md.
"""
# pylint: disable=unused-import
from xlnet.input_pipeline import find_record_files  # noqa: F401
from xlnet.input_pipeline import get_input_fn  # noqa: F401
from xlnet.input_pipeline import make_parser  # noqa: F401
from xlnet.record_format import CORPUS_INFO  # noqa: F401
from xlnet.record_format import data_loss_message  # noqa: F401
from xlnet.record_format import format_filename  # noqa: F401
from xlnet.record_format import load_corpus_info  # noqa: F401
from xlnet.record_format import parse_filename  # noqa: F401
from xlnet.record_format import verify_records  # noqa: F401
from xlnet.record_writer import create_data  # noqa: F401
from xlnet.record_writer import define_flags  # noqa: F401
from xlnet.record_writer import main  # noqa: F401
from xlnet.token_stream import batchify  # noqa: F401
