"""``glasstorch.backends``: switches and questions about compute backends.

Only the names that programs commonly touch: ``backends.cpu.get_cpu_capability()``
(the instruction set of the fast tier's CPU kernels), ``backends.mps.is_available()``
(False: glasstorch has no Metal backend) and the ``backends.cudnn`` flags
(``deterministic``, ``benchmark``, ``allow_tf32``) and ``backends.cuda.matmul``
flags, which programs set for reproducibility or speed and which change nothing here.
"""

from glasstorch.backends import cpu, cuda, cudnn, mps

__all__ = ["cpu", "cuda", "cudnn", "mps"]
