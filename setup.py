"""xlnet-tf: a faithful TensorFlow reimplementation of XLNet.

`pip install .` (or `pip install -e .`) installs the library `xlnet` and
puts every program on PATH under the release's names (`train_gpu.py
--help`, `run_classifier.py ...`, `convert_checkpoint.py ...`): the
top-level scripts themselves, installed as commands (docs/interop.md). The
configs (`xlnet/configs/`: model sizes, flag files) ship as package data,
found under their documented names `configs/NAME` from any directory.
"""
from setuptools import find_packages, setup

# The programs, as the README names them: each a thin script over the library.
PROGRAMS = [
    "data_utils.py", "spm_train.py", "train_gpu.py", "train_tpu.py",
    "train.py", "eval_pretrain.py", "model_utils.py", "convert_checkpoint.py",
    "run_classifier.py", "run_squad.py", "run_race.py", "run_ner.py",
    "reproduce.py", "download.py", "data_service.py", "extract_features.py",
]

setup(
    name="xlnet-tf",
    version="0.1.0",
    description="XLNet pretraining and fine-tuning in TensorFlow "
                "(tf.compat.v1, no Keras), checkpoint-compatible with the "
                "released XLNet models and convertible to HuggingFace.",
    packages=find_packages(include=["xlnet", "xlnet.*"]),
    package_data={"xlnet.configs": ["*.json", "*.flags"]},
    scripts=PROGRAMS,
    python_requires=">=3.9",
    # The ranges the tests run with (requirements/reference.txt: TensorFlow
    # 2.15 + NumPy 1.x; requirements/latest.txt: the newest 2.x + NumPy 2).
    install_requires=[
        "tensorflow>=2.15,<3",
        "numpy>=1.23",
        "sentencepiece>=0.1.99",
        "absl-py>=1.0",
        "safetensors>=0.4",  # convert_checkpoint.py (no PyTorch needed)
    ],
    extras_require={
        "tpu": ["tensorflow-estimator>=2.15,<2.16", "tensorflow>=2.15,<2.16"],
        "test": ["pytest>=7"],
        # The interop tests (requirements/interop.txt) compare with
        # HuggingFace's PyTorch model: test-only.
        "interop": ["torch>=2.1", "transformers>=5,<6", "pytest>=7"],
    },
)
