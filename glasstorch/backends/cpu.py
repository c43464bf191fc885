"""``glasstorch.backends.cpu``: which vector instructions the CPU kernels use.

PyTorch compiles its vectorised CPU kernels several times (plain, AVX2,
AVX-512) and picks one when it starts; glasstorch's fast tier does the same
(fast/build.py). :func:`get_cpu_capability` names the choice, with PyTorch's
strings.
"""


def get_cpu_capability() -> str:
    """The instruction-set level of the fast tier's CPU kernels: "AVX512", "AVX2" or "DEFAULT".

    The best level the CPU supports (``"AVX512"``: AVX-512 F, BW, DQ and VL;
    ``"AVX2"``: AVX2 and FMA; ``"DEFAULT"``: plain x86-64, or a CPU that is not
    x86), unless ``GLASSTORCH_CPU_CAPABILITY`` or PyTorch's
    ``ATEN_CPU_CAPABILITY`` (``default``, ``avx2`` or ``avx512``, set before
    glasstorch is imported) asks for a lower one. Asking for more than the CPU
    has gives a warning and the best it has.

    The answer is the same on both tiers: on the reference tier, whose kernels
    are Python and NumPy, it is the level the fast tier would use in this
    process. Without the fast tier's extension (not built), it is "DEFAULT".

    Example::

        >>> glasstorch.backends.cpu.get_cpu_capability()  # doctest: +SKIP
        'AVX2'
    """
    try:
        from glasstorch.fast import cpu_capability

        return cpu_capability()
    except ImportError:  # the fast tier is not built: no vector kernels at all
        return "DEFAULT"
