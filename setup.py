"""Build hook for glasstorch: the package list and the fast tier's cffi extension.

All other project metadata lives in pyproject.toml. Two things have no
pyproject.toml spelling: ``cffi_modules`` (which compiles
``glasstorch.fast._native`` from ``fast/csrc/*.c`` during ``pip install``) and a
package list that combines discovery with the tier folders' mapping.
"""

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

setup(packages=PACKAGES, cffi_modules=["fast/build.py:ffibuilder"])
