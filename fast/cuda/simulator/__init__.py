"""The CUDA simulator: CUDA's execution model on the CPU, for the same ``.cu`` sources.

Everything of the simulator is in this folder, as numba's ``cuda/simulator``
package is self-contained:

* ``gt_cuda_sim.h``: the kernel side (CUDA's qualifiers, built-in variables,
  barriers, shuffles, atomics, intrinsics), included before each ``.cu``;
* ``gt_cuda_sim_runtime.h`` / ``.c``: the host side (the device memory arena,
  streams as worker threads, events, the block scheduler);
* :mod:`~glasstorch.fast.cuda.simulator.simulator`: the Python side, which
  compiles both with the host compilers and loads them (``Simulator``);
* :mod:`~glasstorch.fast.cuda.simulator.driver`: ``SimulatorDriver``, the
  :class:`glasstorch._gpu.driver.Driver` over it (``GLASSTORCH_CUDA=simulator``).

See ``docs/guide/gpu.md``.
"""
