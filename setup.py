"""Build hook for glasstorch: the package list and the fast tier's cffi extension.

All other project metadata lives in pyproject.toml. Two things have no
pyproject.toml spelling: ``cffi_modules`` (which compiles ``fast/csrc/*.c``
during ``pip install`` into one kernel module per instruction set,
``glasstorch.fast._native_avx512``, ``_native_avx2`` and ``_native_default``,
plus the CPU detector ``_native_cpuinfo``: see fast/build.py) and a package
list that combines discovery with the tier folders' mapping.
"""

import os
from runpy import run_path

from setuptools import find_packages, setup

# Every package under glasstorch/ (found by its __init__.py), plus the two tiers,
# which live in top-level folders and are mapped into glasstorch by package-dir.
PACKAGES = find_packages(include=["glasstorch", "glasstorch.*"]) + [
    "glasstorch.reference",
    "glasstorch.fast",
    "glasstorch.fast.cuda",
    "glasstorch.fast.cuda.kernels",
    "glasstorch.fast.cuda.simulator",
]

# The builders fast/build.py defines (fewer on a CPU that is not x86).
BUILDERS = run_path(os.path.join("fast", "build.py"))["BUILDERS"]

setup(
    packages=PACKAGES,
    cffi_modules=[f"fast/build.py:{name}" for name in BUILDERS],
    # Compile the modules side by side, all at once (each is the same C files
    # with other instruction-set flags), as `python fast/build.py` does.
    options={"build_ext": {"parallel": max(len(BUILDERS), os.cpu_count() or 1)}},
)
