"""tbprof: a fast profile viewer for TensorFlow / JAX / PyTorch profiler output."""

import re
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """Adds flags per compiler: -fwrapv gives int64 time arithmetic numpy's wrap-around
    semantics (signed overflow is undefined in C), -O2 because setuptools' default may be -O0
    on some Pythons."""

    def build_extensions(self) -> None:
        if self.compiler.compiler_type != "msvc":  # MSVC wraps signed overflow already
            for ext in self.extensions:
                ext.extra_compile_args = [*ext.extra_compile_args, "-O2", "-fwrapv"]
        super().build_extensions()


def core_extensions() -> list[Extension]:
    """tbprof._core: plain typed-memoryview Cython, no NumPy C API (so no numpy ABI pin)."""
    from Cython.Build import cythonize

    modules = [Extension(f"tbprof._core.{name}", [f"plugin/tbprof/_core/{name}.pyx"]) for name in ("wire", "kernels")]
    return cythonize(modules, compiler_directives={"language_level": "3"}, quiet=True)  # type: ignore[no-any-return]


version = re.search(r'__version__ = "([^"]+)"', Path("plugin/tbprof/__init__.py").read_text()).group(1)

setup(
    name="tbprof",
    version=version,
    description="TensorBoard plugin, server and CLI that analyses TensorFlow/JAX/PyTorch profiles fast",
    long_description=Path("README.md").read_text() if Path("README.md").exists() else "",
    long_description_content_type="text/markdown",
    package_dir={"": "plugin"},
    packages=find_packages("plugin"),
    package_data={"tbprof": ["static/*", "static/**/*", "protos/*.proto", "protos/*.pyi", "_core/*.pyi"]},
    ext_modules=core_extensions(),
    cmdclass={"build_ext": BuildExt},
    include_package_data=True,
    python_requires=">=3.10",
    install_requires=[
        "tensorboard>=2.15",
        "protobuf>=5.27.2",
        "numpy>=1.26",
        "werkzeug>=3.0",
        "grpcio>=1.60",
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
