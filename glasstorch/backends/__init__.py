"""``glasstorch.backends``: switches and questions about compute backends.

Only the names that programs commonly touch: ``backends.mps.is_available()``
(False: glasstorch has no Metal backend) and the ``backends.cudnn`` flags
(``deterministic``, ``benchmark``), which programs set for reproducibility and
which change nothing here.
"""

from glasstorch.backends import cudnn, mps

__all__ = ["cudnn", "mps"]
