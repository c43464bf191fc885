"""The GPU runtime under ``glasstorch.cuda``: what a CUDA device needs, whoever drives it.

As PyTorch's ``c10/cuda`` sits under ``torch.cuda``, this private package holds
the device-independent half of glasstorch's GPU support; the public API
(:mod:`glasstorch.cuda`) is written on top of it, and the drivers and kernels
(the fast tier's ``fast/cuda/``) implement its interface. It imports neither.

* :mod:`~glasstorch._gpu.driver`: the :class:`Driver` interface every GPU
  runtime implements, and what kernels take from it (stream, memory, tracing);
* :mod:`~glasstorch._gpu.allocator`: the caching allocator, PyTorch's rules in
  plain Python;
* :mod:`~glasstorch._gpu.buffers`: ``DeviceBuffer``, the buffer of a CUDA
  storage, and how its memory returns to the allocator;
* :mod:`~glasstorch._gpu.runtime`: this process's state: the installed driver,
  the allocator, the stream table and each thread's current stream;
* :mod:`~glasstorch._gpu.trace`: the observers (the profiler) of device work.
"""
