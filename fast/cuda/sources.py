"""Reading the ``.cu`` sources of ``fast/cuda``: what both drivers need to know about them.

The CuPy driver (NVRTC on a GPU) and the simulator (the host C++ compiler) run
the same sources; both read from them, with the helpers here:

* :data:`CUDA_DIR`: the folder of the ``.cu`` sources, which is also the
  include directory of their headers (``gt_cuda_common.cuh``, ...);
* :func:`preprocess` and :func:`kernel_signatures`: each ``extern "C"
  __global__`` kernel with its parameter types, read from the preprocessed
  source (so kernels a macro instantiates per dtype are found), which is how
  both drivers convert launch arguments;
* :func:`headers_fingerprint`: a hash of the headers, for caches keyed by a
  source's text;
* :func:`op_codes`: the op codes of a source's op table, by name, as the C
  glue reads the C tier's enums (``fast/elementwise.py``).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

__all__ = [
    "CUDA_DIR",
    "KERNEL_ARITHMETIC",
    "CudaSourceError",
    "cache_dir",
    "digest",
    "headers_fingerprint",
    "kernel_signatures",
    "op_codes",
    "preprocess",
]

#: Where the .cu sources and the headers they include live (the include directory).
CUDA_DIR = Path(__file__).resolve().parent

#: The NVRTC option that fixes the arithmetic of glasstorch's own kernels, on both
#: drivers: no FMA contraction. Each kernel then rounds every product and every sum
#: as its C and Python twins do, and keeps their promises bit for bit (the CPU
#: tiers' random numbers, linspace, float64 optimizer steps). A kernel of the
#: user's (RawKernel, RawModule) keeps NVRTC's default, contraction on, which the
#: simulator follows (its ``float_arithmetic``).
KERNEL_ARITHMETIC: tuple[str, ...] = ("--fmad=false",)

_KERNEL_PATTERN = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(([^)]*)\)')
_COMMENT_PATTERN = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


class CudaSourceError(RuntimeError):
    """A ``.cu`` source could not be read (the preprocessor failed, a table is missing, ...)."""


def cache_dir() -> Path:
    """Where compiled and preprocessed sources are cached:
    ``$GLASSTORCH_SIM_CACHE``, default ``~/.cache/glasstorch/cuda_sim``."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    path = Path(os.environ.get("GLASSTORCH_SIM_CACHE", default / "glasstorch" / "cuda_sim"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def digest(*parts: str) -> str:
    """A short hash of ``parts``: the cache key of a compiled or preprocessed source."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def headers_text() -> str:
    """The text of every header (``*.cuh``) in :data:`CUDA_DIR`, in name order."""
    return "".join(p.read_text() for p in sorted(CUDA_DIR.glob("*.cuh")))


def headers_fingerprint() -> str:
    """A comment line naming a hash of every header in :data:`CUDA_DIR`.

    CuPy caches compiled modules on disk under a key made from the source text
    and the options, but not from the text of the headers the source includes:
    after a header changes, the old binary would be loaded. Appending this line
    to each source makes any header edit a new key."""
    sha = hashlib.sha256()
    for header in sorted(CUDA_DIR.glob("*.cuh")) + sorted(CUDA_DIR.glob("*.h")):
        sha.update(header.name.encode() + b"\0" + header.read_bytes())
    return f"\n// glasstorch headers sha256 {sha.hexdigest()}\n"


def preprocess(source: str) -> str:
    """``source`` run through the host C++ preprocessor (``$CXX -E``), without line markers.

    The include path is ``fast/cuda`` (where ``gt_cuda_common.cuh`` lives) and
    ``GT_CUDA_SIGNATURES`` is defined; the simulator header is *not* included,
    so ``__global__`` survives as a token and no system header is expanded.
    Results are cached in memory and on disk (under :func:`cache_dir`) by a
    digest of the source, the headers of ``fast/cuda`` and the compiler.
    """
    cxx = os.environ.get("CXX", "c++")
    key = digest(source, headers_text(), cxx)
    if key in _PREPROCESSED:
        return _PREPROCESSED[key]
    cached = cache_dir() / f"pre-{key}.cu"
    if cached.exists():
        text = cached.read_text()
    else:
        command = [cxx, "-E", "-P", "-x", "c++", "-std=c++17", f"-I{CUDA_DIR}"]
        command += ["-DGT_CUDA_SIGNATURES=1", "-"]
        result = subprocess.run(command, input=source, capture_output=True, text=True)
        if result.returncode != 0:
            raise CudaSourceError(
                f"preprocessing CUDA source failed ({' '.join(command)}):\n{result.stderr}"
            )
        text = result.stdout
        fd, partial = tempfile.mkstemp(dir=cached.parent, suffix=".partial")
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(partial, cached)
    _PREPROCESSED[key] = text
    return text


_PREPROCESSED: dict[str, str] = {}


def kernel_signatures(source: str, preprocessed: bool = False) -> dict[str, list[tuple[str, str]]]:
    """The ``extern "C" __global__`` kernels of a .cu source: name -> [(type, name), ...].

    The source is read after the C preprocessor has run (see :func:`preprocess`),
    so kernels that a macro instantiates per dtype (``GT_FOR_EACH_DTYPE``) are
    found with their parameter types. Pass ``preprocessed=True`` for text that
    has already been through it.
    """
    text = source if preprocessed else preprocess(source)
    kernels = {}
    for match in _KERNEL_PATTERN.finditer(_COMMENT_PATTERN.sub(" ", text)):
        params = []
        for param in match.group(2).split(","):
            param = " ".join(param.replace("__restrict__", " ").split())
            if not param or param == "void":
                continue
            name = re.search(r"(\w+)$", param).group(1)
            ctype = param[: -len(name)].strip()
            params.append((ctype, name))
        kernels[match.group(1)] = params
    return kernels


def op_codes(source: str | os.PathLike, table: str) -> dict[str, int]:
    """Op name -> code of the op table ``table`` of a ``.cu`` file (a name in
    :data:`CUDA_DIR`, or a path): the entries ``X(code, name, ...)`` of the
    X-macro ``#define <table>(X)``, or else the lines ``#define <table>_<NAME> <code>``.

    This binds the codes a kernel switches on by name, as the C glue binds
    the C tier's (``fast/elementwise.py`` reads ``GT_UNARY_<NAME>``), so the
    order of the contract's op tuples does not matter.

    Raises:
        CudaSourceError: the file has no such table.
    """
    text = _COMMENT_PATTERN.sub(" ", (CUDA_DIR / source).read_text())
    macro = re.search(rf"#define {table}\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    if macro is not None:
        entries = re.findall(r"X\(\s*(\d+)\s*,\s*(\w+)", macro.group(1))
    else:
        entries = re.findall(rf"#define {table}_(\w+)\s+(\d+)", text)
        entries = [(code, name.lower()) for name, code in entries]
    if not entries:
        raise CudaSourceError(f"{source} has no op table {table}")
    return {name: int(code) for code, name in entries}
