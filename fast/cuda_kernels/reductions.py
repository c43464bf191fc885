class ReductionKernels:
    """reduce (coming)."""
