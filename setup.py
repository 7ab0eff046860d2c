"""tbprof: a fast profile viewer for TensorFlow / JAX / PyTorch profiler output."""

import re
from pathlib import Path

from setuptools import find_packages, setup

version = re.search(r'__version__ = "([^"]+)"', Path("plugin/tbprof/__init__.py").read_text()).group(1)

setup(
    name="tbprof",
    version=version,
    description="TensorBoard plugin, server and CLI that analyses TensorFlow/JAX/PyTorch profiles fast",
    long_description=Path("README.md").read_text() if Path("README.md").exists() else "",
    long_description_content_type="text/markdown",
    package_dir={"": "plugin"},
    packages=find_packages("plugin"),
    package_data={"tbprof": ["static/*", "static/**/*", "protos/*.proto", "protos/*.pyi"]},
    include_package_data=True,
    python_requires=">=3.10",
    install_requires=[
        "tensorboard>=2.15",
        "protobuf>=5.27.2",
        "numpy>=1.26",
        "numba>=0.60",
        "werkzeug>=3.0",
        "grpcio>=1.60",
        # User regexes run on RE2 (linear time): see tbprof/domain/regex.py.
        "google-re2==1.1.20251105",
    ],
    extras_require={
        "test": ["pytest>=8", "ruff>=0.6", "mypy>=1.10", "playwright==1.65.2", "import-linter==2.17"],
        # Real profiler servers for the capture tests: TensorFlow and JAX (CPU wheels).
        "capture-test": ["tensorflow-cpu==2.21.0", "jax[cpu]==0.10.2"],
    },
    entry_points={
        "tensorboard_plugins": ["tbprof = tbprof.tb_plugin:TbprofLoader"],
        "console_scripts": ["tbprof = tbprof.cli.main:main"],
    },
)
