"""Importing glasstorch from a checkout that is not installed.

Installed, the tiers are subpackages (``glasstorch.reference``, ``glasstorch.fast``).
In a checkout they live beside the package (``reference/``, ``fast/``); run from
the repository's root without installing (``python -m glasstorch...``), the
checkout's root is searched for glasstorch's subpackages too, so they are found.
"""

import os
import sys

_package = sys.modules["glasstorch"]
_checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.path.isdir(os.path.join(_package.__path__[0], "reference")) and os.path.isfile(
    os.path.join(_checkout, "reference", "__init__.py")
):
    _package.__path__.append(_checkout)
