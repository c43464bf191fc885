"""The fast tier's GPU half: the CUDA kernels, and the drivers that run them.

* ``*.cu`` and ``*.cuh`` (this folder): the kernels, one source per family,
  written once for both a real GPU and the simulator (see ``README.md``);
* :mod:`~glasstorch.fast.cuda.sources`: what both drivers read from those
  sources (the include directory, kernel signatures, op tables, header hash);
* :mod:`~glasstorch.fast.cuda.kernels`: the kernel contract on the device,
  one mixin per family (:func:`make_kernels`);
* the drivers, implementations of :class:`glasstorch._gpu.driver.Driver`:
  :mod:`~glasstorch.fast.cuda.cupy_driver` (an NVIDIA GPU through CuPy) and
  :mod:`~glasstorch.fast.cuda.simulator` (the CUDA simulator, in one folder).

``glasstorch._tier`` asks this module, by name, for the driver that
``GLASSTORCH_CUDA`` chooses (:func:`make_driver`) and for the kernels over it
(:func:`make_kernels`); nothing of the frontend imports a driver itself.
"""

from __future__ import annotations

#: The drivers by their ``GLASSTORCH_CUDA`` name: (module in this package, class).
DRIVERS = {
    "simulator": ("simulator.driver", "SimulatorDriver"),
    "cupy": ("cupy_driver", "CupyDriver"),
}


def make_driver(name: str):
    """A new driver ``name`` (``"simulator"`` or ``"cupy"``), imported only now."""
    import importlib

    module, cls = DRIVERS[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)()


def cupy_problem() -> str | None:
    """None when CuPy is installed and sees a GPU; otherwise why not."""
    try:
        import cupy
    except ImportError as error:
        return f"CuPy is not installed ({error})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # noqa: BLE001 - any CUDA failure means "no usable GPU"
        return f"CuPy finds no usable CUDA device ({error})"
    return None if count > 0 else "CuPy finds no CUDA device"


def make_kernels(driver, host):
    """The kernel contract on the device of ``driver``, over the CPU tier ``host``."""
    from .kernels import make_kernels as make_cuda_kernels

    return make_cuda_kernels(driver, host)
