class LinalgKernels:
    """matmul (coming)."""
