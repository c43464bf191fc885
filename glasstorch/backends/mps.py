"""``glasstorch.backends.mps``: Apple's Metal backend, which glasstorch does not have."""


def is_available() -> bool:
    """Whether an MPS device can be used: False."""
    return False


def is_built() -> bool:
    """Whether this build includes MPS support: False."""
    return False
