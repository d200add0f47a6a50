"""xlnet-tf: a faithful TensorFlow reimplementation of XLNet pretraining."""
from setuptools import find_packages, setup

setup(
    name="xlnet-tf",
    version="0.1.0",
    description="XLNet pretraining in TensorFlow (tf.compat.v1, no Keras), "
                "checkpoint-compatible with the released XLNet models.",
    packages=find_packages(include=["xlnet", "xlnet.*"]),
    python_requires=">=3.9",
    install_requires=[
        # 2.15 is the reference (last release with TPUEstimator); everything
        # but the TPUEstimator trainer runs on the newest 2.x.
        "tensorflow>=2.15,<3",
        "numpy",
        "sentencepiece>=0.1.99",
        "absl-py>=1.0",
    ],
    extras_require={
        "tpu": ["tensorflow-estimator>=2.15,<2.16", "tensorflow>=2.15,<2.16"],
        "test": ["pytest>=7"],
    },
)
