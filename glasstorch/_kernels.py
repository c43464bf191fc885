"""The kernel contract: the line between the frontend and a tier.

Everything above this line (tensor metadata, views, broadcasting, type
promotion, output allocation, autograd, nn, optim) is bookkeeping written once
in Python. Everything below it is a *tier*: the code that owns storage and runs
loops over it. ``glasstorch.reference`` implements every kernel here as plain
Python loops; ``glasstorch.fast`` implements the same kernels in C.

Conventions shared by every kernel
----------------------------------
* A tensor argument is a :class:`Strided`: a flat storage buffer plus the
  ``shape``, ``strides`` (in elements) and ``offset`` that describe where each
  logical element lives.  Element ``(i0, i1, ...)`` is stored at
  ``buffer[offset + i0 * strides[0] + i1 * strides[1] + ...]``.
* The **output comes first**, then the inputs, then plain parameters.
* The frontend has already allocated the output, broadcast every input to the
  output's shape (broadcast dimensions have stride 0) and cast every input to the
  dtype the computation runs in. So an elementwise kernel is one walk over the
  output's indices, and no kernel ever promotes types or checks shapes.
* Operations are named by strings from :data:`UNARY_OPS`, :data:`BINARY_OPS`,
  :data:`REDUCE_OPS`: each tier keeps a table from name to implementation instead
  of one kernel per operation.
* Kernels write into ``out`` and return ``None``, unless stated otherwise.
* **Kernels that read an index check it themselves** (gather, scatter,
  index_select, index_put, cross_entropy and its backward). The frontend
  checks shapes and dtypes but not index values: another Python thread may
  write the index tensor at any moment, even during the kernel call, so a
  check made before the call proves nothing. Each index is read exactly once
  into a local, checked against the size of the dimension it addresses
  (``0 <= i < size``; negative indices are out of range, never wrapped), and
  only that local is used. A kernel that meets a bad index reads and writes
  nothing through it and *returns* it (the first it met): the frontend turns
  the returned value into PyTorch's ``IndexError``/``RuntimeError``. After
  such a return the output's contents are unspecified (the frontend always
  discards it). A kernel whose indices are all in range returns ``None``.
"""

from __future__ import annotations

from typing import Any


class Strided:
    """A strided view of a flat buffer, the only tensor type kernels see.

    It unpacks like a tuple: ``buffer, shape, strides, offset = view``.

    Attributes:
        buffer: the flat, one-dimensional storage (a NumPy array on the CPU).
            Its dtype is the element type of the view.
        shape: size of each dimension.
        strides: distance, in elements, between neighbours along each dimension.
        offset: position in ``buffer`` of the element with index ``(0, 0, ...)``.
        native: a slot a tier may fill with its own form of this view, built
            the first time a kernel receives it (the fast tier keeps its C
            struct here). The frontend never reads it. A tensor hands out the
            same ``Strided`` on every call, so that work is done once per
            tensor rather than once per kernel call.
    """

    __slots__ = ("buffer", "shape", "strides", "offset", "native")

    def __init__(self, buffer: Any, shape: tuple[int, ...], strides: tuple[int, ...], offset: int):
        self.buffer = buffer
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.native = None

    def __iter__(self):
        return iter((self.buffer, self.shape, self.strides, self.offset))

    def _replace(self, **changes) -> Strided:
        """A new view with some fields changed (as ``NamedTuple._replace`` does)."""
        fields = {
            "buffer": self.buffer,
            "shape": self.shape,
            "strides": self.strides,
            "offset": self.offset,
        }
        fields.update(changes)
        return Strided(**fields)

    def __repr__(self) -> str:
        return (
            f"Strided(buffer=<{self.buffer.dtype} x {len(self.buffer)}>, shape={self.shape}, "
            f"strides={self.strides}, offset={self.offset})"
        )


#: Unary elementwise operations: ``out[i] = op(a[i])``. ``out`` has a's dtype,
#: except the predicates (``isnan``), whose ``out`` is bool.
UNARY_OPS = (
    "neg",
    "abs",
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "sin",
    "cos",
    "tanh",
    "sigmoid",
    "erf",  # the error function, for the exact GELU
    "relu",
    "sign",
    "floor",
    "ceil",
    "round",  # half to even, as PyTorch
    "trunc",
    "logical_not",  # out is bool
    "bitwise_not",  # integers and bool only
    "isnan",  # out is bool
)

#: Binary elementwise operations: ``out[i] = op(a[i], b[i])``. ``a`` and ``b``
#: share one dtype; ``out`` has it too, except for comparisons and logical ops,
#: whose ``out`` is bool.
BINARY_OPS = (
    "add",
    "sub",
    "mul",
    "div",  # true division; the frontend only calls it on floating dtypes
    "floor_divide",  # rounds toward minus infinity, as Python's //
    "remainder",  # sign of the divisor, as Python's %
    "pow",
    "maximum",  # propagates NaN
    "minimum",  # propagates NaN
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    # ReLU's gradient, as PyTorch's threshold_backward(a, b, 0): 0 where
    # b <= 0, else a (a NaN b passes a through). a is the incoming gradient,
    # b the ReLU's output: one pass where ``where(b > 0, a, 0)`` takes three.
    "threshold_backward",
)

#: Comparisons and logical ops write a bool ``out`` whatever their inputs are.
BOOL_RESULT_OPS = frozenset(
    {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
    | {"logical_not", "isnan"}
)

#: Reductions: ``sum``, ``prod``, ``amax``, ``amin``, ``all`` (bool out), ``any`` (bool out).
REDUCE_OPS = ("sum", "prod", "amax", "amin", "all", "any")


class Kernels:
    """Every kernel a tier must provide. Each method documents its meaning.

    This class is the contract: a tier subclasses it and overrides *every*
    method. The conformance suite checks that no tier leaves one out, so there is
    never a silent fallback from one tier to another.
    """

    #: The tier's name, as ``GLASSTORCH_TIER`` spells it.
    name = "abstract"

    # ------------------------------------------------------------------ threads
    def set_num_threads(self, n: int) -> None:
        """Let each kernel call use up to ``n`` threads (``n >= 1``, checked by the frontend).

        The setting applies to kernel calls made from the thread that set it,
        as OpenMP's does.
        """
        raise NotImplementedError

    def get_num_threads(self) -> int:
        """How many threads a kernel call may use."""
        raise NotImplementedError

    # ------------------------------------------------------------------ storage
    def allocate(self, numel: int, dtype: Any) -> Any:
        """Return a new flat buffer of ``numel`` elements of NumPy ``dtype``.

        The contents are unspecified (like ``torch.empty``).
        """
        raise NotImplementedError

    # ------------------------------------------------------------- elementwise
    def fill(self, out: Strided, value: Any) -> None:
        """Set every element of ``out`` to the Python number ``value``.

        ``value`` is already converted to out's type (a float, int or bool).
        """
        raise NotImplementedError

    def copy(self, out: Strided, src: Strided) -> None:
        """``out[i] = src[i]``, converting src's dtype to out's.

        Float to integer conversion truncates toward zero; integer conversion
        wraps around (``-1`` becomes ``255`` in uint8); anything to bool is
        ``x != 0``. ``src`` may overlap ``out`` only if both are the same view.
        """
        raise NotImplementedError

    def unary(self, op: str, out: Strided, a: Strided) -> None:
        """``out[i] = op(a[i])`` for ``op`` in :data:`UNARY_OPS`.

        Follows IEEE-754 where Python would raise: ``log(0)`` is ``-inf``,
        ``sqrt(-1)`` is ``nan``, ``exp(1000)`` is ``inf``.
        """
        raise NotImplementedError

    def binary(self, op: str, out: Strided, a: Strided, b: Strided) -> None:
        """``out[i] = op(a[i], b[i])`` for ``op`` in :data:`BINARY_OPS`.

        Floating division by zero gives ``inf``/``nan`` as IEEE-754 says. Integer
        ``floor_divide``/``remainder`` by zero is caught by the frontend
        (``ZeroDivisionError``) before the kernel runs.
        """
        raise NotImplementedError

    def add_scaled(self, out: Strided, a: Strided, b: Strided, alpha: Any) -> None:
        """``out[i] = a[i] + alpha * b[i]``: ``add``'s and ``sub``'s ``alpha`` in one pass.

        ``out``, ``a`` and ``b`` share one dtype, integer or floating (not
        bool); ``out`` may be the very view ``a`` (``x.add_(y, alpha=2)``).
        ``alpha`` is a Python int for an integer dtype and a float for a
        floating one. Integers wrap around. Floats round ``alpha`` to the
        dtype, then compute ``a + alpha * b`` in double precision and round
        once when storing (PyTorch fuses the multiply and add likewise).
        """
        raise NotImplementedError

    def where(self, out: Strided, cond: Strided, a: Strided, b: Strided) -> None:
        """``out[i] = a[i] if cond[i] else b[i]``; ``cond`` is bool."""
        raise NotImplementedError

    # -------------------------------------------------------------- reductions
    def reduce(self, op: str, out: Strided, a: Strided, dims: tuple[int, ...]) -> None:
        """Reduce ``a`` over ``dims`` with ``op`` from :data:`REDUCE_OPS`.

        ``out`` has a's number of dimensions, with size 1 along every reduced
        dimension (the ``keepdim=True`` shape). An empty reduction gives the
        identity (0 for sum, 1 for prod, True for all, False for any); the
        frontend rejects empty ``amax``/``amin``. ``amax``/``amin`` propagate NaN.
        Sums of floats accumulate in float64 or with pairwise summation, never in
        one long float32 running sum.
        """
        raise NotImplementedError

    def arg_reduce(self, op: str, values: Strided, indices: Strided, a: Strided, dim: int) -> None:
        """Extreme values of ``a`` along ``dim`` and where they are.

        ``op`` is ``"max"`` or ``"min"``. ``values`` (a's dtype) and ``indices``
        (int64) have the keepdim shape. The index is the first occurrence of the
        extreme; a NaN counts as larger (for max) or smaller (for min) than
        everything, so the first NaN wins, as in PyTorch.
        """
        raise NotImplementedError

    def cumsum(self, out: Strided, a: Strided, dim: int) -> None:
        """Running sum of ``a`` along ``dim``; ``out`` has a's shape."""
        raise NotImplementedError

    def sort(
        self, values: Strided, indices: Strided, a: Strided, dim: int, descending: bool
    ) -> None:
        """Stable sort of each 1-D slice of ``a`` along ``dim``.

        ``values`` (a's dtype) and ``indices`` (int64) have a's shape:
        ``values`` holds each slice in ascending order (descending when
        ``descending``) and ``indices`` where each value was in the slice.
        Equal elements keep their order in either direction. NaN counts as
        larger than every number (last ascending, first descending), as in
        PyTorch. ``values`` and ``indices`` do not overlap ``a``.
        """
        raise NotImplementedError

    def softmax(self, out: Strided, a: Strided, dim: int, log: bool) -> None:
        """Softmax of ``a`` along ``dim`` (``log_softmax`` when ``log`` is true).

        Fused and numerically safe: subtract the maximum of each slice before
        exponentiating, so large inputs never overflow.
        """
        raise NotImplementedError

    # ---------------------------------------------------------- linear algebra
    def matmul(self, out: Strided, a: Strided, b: Strided) -> None:
        """Batched matrix product ``out[..., i, j] = sum_k a[..., i, k] * b[..., k, j]``.

        ``out`` is ``(*batch, M, N)``, ``a`` is ``(*batch, M, K)`` and ``b`` is
        ``(*batch, K, N)``; batch dimensions are already broadcast (stride 0
        where an input is repeated). ``K`` may be 0, giving zeros.
        """
        raise NotImplementedError

    def causal_matmul(self, out: Strided, a: Strided, b: Strided, triangle: str) -> None:
        """:meth:`matmul` for the products of causal attention, which skips the
        multiply-adds a causal mask makes zero.

        The mask is the lower triangle from the top-left corner (``is_causal``
        in PyTorch): position ``i`` sees positions ``j <= i``. ``triangle`` says
        where it applies:

        - ``"out"``: only ``out[..., i, j]`` with ``j <= i`` is computed (the
          attention scores ``Q K^T``); every ``j > i`` gets exactly 0.
        - ``"a"``: ``a`` is zero above its diagonal (causal attention weights
          ``P``, in ``P V``): ``out[..., i, j] = sum_{k <= i} a[..., i, k] * b[..., k, j]``.
        - ``"a_transposed"``: ``a`` is zero below its diagonal (``P^T``, in
          ``P^T dO``): the sum runs over ``k >= i``.

        With ``"a"`` and ``"a_transposed"`` the sums leave out only terms whose
        ``a`` factor is zero, so for finite numbers the result is the full
        product's (``0 * inf`` in a skipped term would have made a NaN). Shapes
        as :meth:`matmul`; float dtypes.
        """
        raise NotImplementedError

    # ---------------------------------------------------------------- indexing
    def gather(self, out: Strided, a: Strided, dim: int, index: Strided) -> int | None:
        """``out[..., j, ...] = a[..., index[..., j, ...], ...]`` along ``dim``.

        ``out`` and ``index`` (int64) have one shape; along every dimension but
        ``dim`` it is no larger than a's. A 0-d ``index`` may pick from a 1-D
        ``a``, and a 1-D one from a 0-d ``a`` (which has one position along
        ``dim``: index 0).

        Returns None, or the first index outside ``[0, a.shape[dim])`` (see
        the index-checking convention above).
        """
        raise NotImplementedError

    def scatter(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> int | None:
        """``out[..., index[..., j, ...], ...] = src[..., j, ...]`` along ``dim``.

        ``index`` and ``src`` share a shape. With ``accumulate`` the values are
        added (``scatter_add``), otherwise the last write wins.

        Returns None, or the first index outside ``[0, out.shape[dim])`` it met.
        """
        raise NotImplementedError

    def index_select(self, out: Strided, a: Strided, dim: int, index: Strided) -> int | None:
        """Slices of ``a`` along ``dim`` picked by the 1-D int64 ``index``.

        ``out`` has a's shape with ``len(index)`` along ``dim``:
        ``out[..., j, ...] = a[..., index[j], ...]``.

        Returns None, or the first index outside ``[0, a.shape[dim])`` it met.
        """
        raise NotImplementedError

    def index_put(
        self, out: Strided, dim: int, index: Strided, src: Strided, accumulate: bool
    ) -> int | None:
        """The reverse of ``index_select``: ``out[..., index[j], ...] (+)= src[..., j, ...]``.

        ``src`` has out's shape with ``len(index)`` along ``dim``. With
        ``accumulate`` the slices are added (``index_add_``); otherwise they are
        copied and the last write wins (``index_copy_``).

        Returns None, or the first index outside ``[0, out.shape[dim])`` it met.
        """
        raise NotImplementedError

    def nonzero(self, out: Strided, a: Strided) -> None:
        """Write the index of every non-zero element of ``a``, in row-major order.

        ``out`` is int64 of shape ``(count, a.ndim)``, where the frontend has
        counted the non-zero elements beforehand.
        """
        raise NotImplementedError

    # ---------------------------------------------------------------- creation
    def arange(self, out: Strided, start: Any, step: Any) -> None:
        """1-D ``out[i] = start + i * step``, PyTorch's values bit for bit.

        An integer ``out`` gets ints and is exact (wrapping into its dtype). A
        float ``out`` takes ``start`` and ``step`` as doubles and, with ``fma``
        one fused multiply-add rounded once to double, follows PyTorch's
        vectorised CPU loop: ``L`` lanes (8 for float32, 4 for float64: one
        256-bit vector) and blocks of ``2 * L`` values. For ``i`` in the whole
        blocks (``i < n - n % (2 * L)``), with ``f = i - i % L`` the first index
        of i's vector and ``base = out_dtype(fma(step, f, start))``,

        * ``out[i] = out_dtype(fma(i - f, step, base))``;

        every value after the last whole block is
        ``out_dtype(fma(step, i, start))``.
        """
        raise NotImplementedError

    def linspace(self, out: Strided, start: float, end: float) -> None:
        """1-D evenly spaced values from ``start`` to ``end``, both included.

        PyTorch's values, bit for bit. The arithmetic ``M`` is float32 for a
        float32 ``out`` and double otherwise: ``start`` and ``end`` are rounded
        to ``M``, ``step = (end - start) / (n - 1)`` is two ``M`` operations,
        and with ``fma`` one fused multiply-add rounded once to ``M``,

        * ``out[i] = fma(step, i, start)`` for ``i < n // 2``,
        * ``out[i] = fma(-step, n - 1 - i, end)`` for the rest,

        so both ends are exact. An integer ``out`` truncates each double value
        toward zero. A single point is ``start``.
        """
        raise NotImplementedError

    # --------------------------------------------------------- neural networks
    def cross_entropy(
        self,
        losses: Strided,
        row_weights: Strided,
        totals: Strided,
        log_probs: Strided,
        logits: Strided,
        target: Strided,
        weight: Strided | None,
        ignore_index: int,
    ) -> int:
        """Fused log-softmax and weighted negative log-likelihood over class indices.

        ``logits`` and ``log_probs`` are ``(N, C)``; ``target`` (int64),
        ``losses`` and ``row_weights`` are ``(N,)``; ``weight`` is ``(C,)``, one
        weight per class, or None for weights of 1. All floating views share
        one dtype. For each row ``i`` with label ``t = target[i]``:

        * ``log_probs[i] = log_softmax(logits[i])`` (numerically safe, as
          :meth:`softmax`);
        * ``row_weights[i] = weight[t]`` (1 without ``weight``), or 0 where
          ``t == ignore_index``;
        * ``losses[i] = -row_weights[i] * log_probs[i, t]``, or 0 where ignored;

        and the reductions, into ``totals`` (3 elements, the same dtype):
        ``totals[0]`` is the sum of ``losses``, ``totals[1]`` the sum of
        ``row_weights`` and ``totals[2]`` their quotient, the weighted mean
        (``reduction="mean"``; NaN when every row is ignored). Each sum runs
        over the stored values in row order, in double precision, so it does
        not depend on how the rows were split across threads.

        Each label is read once and checked before anything is read through
        it. A label outside ``[0, C)`` that is not ``ignore_index`` is never
        used: the kernel returns the first row holding one, for the
        frontend's ``IndexError`` (its outputs are then unspecified).
        Otherwise it returns -1.
        """
        raise NotImplementedError

    def cross_entropy_backward(
        self,
        grad_logits: Strided,
        log_probs: Strided,
        target: Strided,
        weight: Strided | None,
        grad_losses: Strided,
        ignore_index: int,
    ) -> None:
        """The gradient of :meth:`cross_entropy`'s ``losses`` with respect to ``logits``.

        ``grad_logits`` and ``log_probs`` are ``(N, C)``; ``target`` and
        ``grad_losses`` (the gradient arriving for each row's loss; stride 0
        when one value serves every row) are ``(N,)``. For row ``i`` with label
        ``t`` and weight ``w = weight[t]`` (1 without ``weight``)::

            grad_logits[i, j] = grad_losses[i] * w * (exp(log_probs[i, j]) - (j == t))

        and a row of zeros where ``t == ignore_index``. Labels were checked by
        :meth:`cross_entropy`, but the target may have been written since: a
        label out of range (read once, then checked) reads nothing through it
        and gets a row of zeros.
        """
        raise NotImplementedError

    # ------------------------------------------------------ transformer blocks
    # The fused kernels of a transformer's step: LayerNorm, GELU and the
    # attention softmax, each one pass forward and one backward instead of a
    # chain of elementwise operations and temporaries. Every view is
    # **contiguous** and of one float dtype (float32 or float64): the frontend
    # makes it so. A "row" is the last dimension: ``(R, N)`` views.
    def row_moments(self, mean: Strided, var: Strided, input: Strided) -> None:
        """``mean[r]`` and the *biased* variance ``var[r]`` of each row of ``input``.

        PyTorch's CPU algorithm, in the input's own precision (each operation
        rounded to float32 for a float32 input): Welford's update in 8
        (float64: 4) lanes over chunks of 16 vectors merged in a cascade, the
        ``N % lanes`` values left over added one at a time, then the lanes
        merged into them in order (``reference/moments.py`` has the exact
        steps). So a float32 row holding ``1e30`` has an infinite variance,
        as in PyTorch, and its normalised outputs are 0 (or NaN).
        """
        raise NotImplementedError

    def layer_norm(
        self,
        out: Strided,
        mean: Strided,
        rstd: Strided,
        input: Strided,
        weight: Strided | None,
        bias: Strided | None,
        eps: float,
    ) -> None:
        """Normalize each row of ``input`` ``(R, N)``, then scale and shift.

        For row ``r``: ``mean[r]`` and ``var`` are :meth:`row_moments`' (in
        the input's precision), ``rstd[r] = 1 / sqrt(max(var, 0) + eps)``
        (each step rounded to the dtype), and, with one rounding for the
        scale and shift (a fused multiply-add)::

            out[r, j] = (input[r, j] - mean[r]) * rstd[r] * weight[j] + bias[j]

        ``mean`` and ``rstd`` are ``(R,)`` and are kept for
        :meth:`layer_norm_backward`. A missing ``weight`` is 1, a missing
        ``bias`` 0.
        """
        raise NotImplementedError

    def layer_norm_backward(
        self,
        grad_input: Strided | None,
        grad_weight: Strided | None,
        grad_bias: Strided | None,
        grad_output: Strided,
        input: Strided,
        mean: Strided,
        rstd: Strided,
        weight: Strided | None,
    ) -> None:
        """The gradients of :meth:`layer_norm`; a None output is not wanted.

        With ``dy = grad_output``, ``xhat = (input - mean) * rstd`` and
        ``g = dy * weight`` (``dy`` without weight), per row ``r`` (sums over
        the ``N`` elements of the row, in double precision)::

            grad_input[r, j] = rstd[r] * (g[r, j] - sum(g[r]) / N
                                          - xhat[r, j] * sum(g[r] * xhat[r]) / N)

        and, summed over the rows ``r`` (in double precision, in row order):
        ``grad_weight[j] = sum(dy[r, j] * xhat[r, j])``, ``grad_bias[j] =
        sum(dy[r, j])``.
        """
        raise NotImplementedError

    def gelu(self, out: Strided, input: Strided, approximate: bool) -> None:
        """GELU, elementwise: ``out = x * Phi(x)``, Phi the standard normal CDF.

        Exact: ``x * 0.5 * (1 + erf(x / sqrt(2)))``. With ``approximate``
        (PyTorch's ``approximate="tanh"``):
        ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``.
        """
        raise NotImplementedError

    def gelu_backward(
        self, grad_input: Strided, grad_output: Strided, input: Strided, approximate: bool
    ) -> None:
        """The gradient of :meth:`gelu`: ``grad_input = grad_output * gelu'(input)``.

        Exact: ``gelu'(x) = Phi(x) + x * phi(x)``, with the normal density
        ``phi(x) = exp(-x^2 / 2) / sqrt(2 pi)``. With ``approximate``, for
        ``u = sqrt(2 / pi) * (x + 0.044715 * x^3)`` and ``t = tanh(u)``:
        ``gelu'(x) = 0.5 * (1 + t) + 0.5 * x * (1 - t^2) * sqrt(2 / pi) *
        (1 + 3 * 0.044715 * x^2)``.
        """
        raise NotImplementedError

    def attention_softmax(self, out: Strided, scores: Strided, scale: float, causal: bool) -> None:
        """The attention weights: softmax over the last dimension of ``scale * scores``.

        ``out`` and ``scores`` are ``(B, L, S)`` (B the batch and heads
        flattened). With ``causal``, query position ``i`` sees only the key
        positions ``j <= i`` (the lower triangle from the top-left corner, as
        ``is_causal=True`` in PyTorch): those are softmaxed among themselves
        and every ``j > i`` gets exactly 0, without a mask in memory. Safe as
        :meth:`softmax`: the row's maximum is subtracted before ``exp``, and
        the sum runs in double precision. A row with no visible position
        (``causal`` and ``S == 0``) does not occur.
        """
        raise NotImplementedError

    def softmax_backward(
        self, grad_input: Strided, grad_output: Strided, output: Strided, scale: float
    ) -> None:
        """The gradient of a softmax over the last dimension, from its ``output``.

        All three are ``(R, N)``; per row, with ``y = output`` and ``g =
        grad_output``: ``grad_input = scale * y * (g - sum(g * y))``, the sum in
        double precision. ``scale`` is 1 for :meth:`softmax` and the scores'
        factor for :meth:`attention_softmax` (whose masked positions, where
        ``y`` is 0, get 0).
        """
        raise NotImplementedError

    # ------------------------------------------------------------- LSTM cell
    # One LSTM time step's elementwise work, forward and backward, so that a
    # step of nn.LSTM is a matrix product and one kernel call rather than a
    # dozen small operations. Every argument is a contiguous (B, H) or
    # (B, 4H) tensor of one float dtype; the gates are in PyTorch's order
    # i, f, g, o along the last dimension.
    def lstm_cell(
        self,
        h: Strided,
        c: Strided,
        activations: Strided,
        tanh_c: Strided,
        gates: Strided,
        c_prev: Strided,
    ) -> None:
        """One LSTM step from the gates' pre-activations ``gates`` ``(B, 4H)``.

        Writes ``activations`` ``(B, 4H)`` = ``[sigmoid(i), sigmoid(f), tanh(g),
        sigmoid(o)]`` of the four slices of ``gates``, then, elementwise over
        ``(B, H)``::

            c      = f * c_prev + i * g
            tanh_c = tanh(c)
            h      = o * tanh_c

        ``activations`` and ``tanh_c`` are what :meth:`lstm_cell_backward` needs.
        """
        raise NotImplementedError

    def lstm_cell_backward(
        self,
        d_gates: Strided,
        d_c_prev: Strided,
        d_h: Strided,
        d_c: Strided,
        activations: Strided,
        tanh_c: Strided,
        c_prev: Strided,
    ) -> None:
        """The gradient of :meth:`lstm_cell` with respect to ``gates`` and ``c_prev``.

        ``d_h`` and ``d_c`` ``(B, H)`` are the gradients reaching the step's
        ``h`` and ``c`` (``d_c`` from the next step only). With ``i, f, g, o``
        the slices of ``activations``::

            dc = d_c + d_h * o * (1 - tanh_c^2)
            d_gates  = [dc * g * i (1 - i), dc * c_prev * f (1 - f),
                        dc * i * (1 - g^2), d_h * tanh_c * o (1 - o)]
            d_c_prev = dc * f
        """
        raise NotImplementedError

    def lstm_forward(
        self,
        hs: Strided,
        cs: Strided,
        activations: Strided,
        tanh_c: Strided,
        inputs: Strided,
        bias: Strided | None,
        w_hh: Strided,
        reverse: bool,
    ) -> None:
        """A whole LSTM layer over a sequence: every step's product and :meth:`lstm_cell`.

        ``inputs`` ``(T, B, 4H)`` is each step's input share of the gates
        (``x_t @ W_ih^T``), ``bias`` ``(4H,)`` the sum of both biases or
        ``None`` for none, ``w_hh`` ``(4H, H)``. ``hs`` and
        ``cs`` ``(T + 1, B, H)`` hold the initial state in slot 0 (slot ``T``
        with ``reverse``). The steps run in order (last to first with
        ``reverse``); with ``before, after = t, t + 1`` (``t + 1, t`` with
        ``reverse``), step ``t`` is::

            gates = inputs[t] + bias + hs[before] @ w_hh^T
            lstm_cell(hs[after], cs[after], activations[t], tanh_c[t], gates, cs[before])

        ``activations`` ``(T, B, 4H)`` and ``tanh_c`` ``(T, B, H)`` are what
        :meth:`lstm_backward` needs. The three terms of ``gates`` may be added
        in any order. Every argument contiguous, of one float dtype.
        """
        raise NotImplementedError

    def lstm_backward(
        self,
        d_inputs: Strided,
        d_h: Strided,
        d_c: Strided,
        d_outputs: Strided | None,
        activations: Strided,
        tanh_c: Strided,
        cs: Strided,
        w_hh: Strided,
        reverse: bool,
    ) -> None:
        """The gradient of :meth:`lstm_forward`, through time.

        ``d_h`` and ``d_c`` ``(B, H)`` hold the gradient reaching the last
        state on entry and are overwritten with the gradient of the initial
        state (the one kernel argument both read and written). ``d_outputs``
        ``(T, B, H)`` is the gradient reaching each step's ``h``, or ``None``
        for zeros. ``activations``, ``tanh_c`` and ``cs`` are as
        :meth:`lstm_forward` left them. In the reverse of the forward order,
        with ``before`` as there::

            d_h += d_outputs[t]
            lstm_cell_backward(d_inputs[t], d_c, d_h, d_c, activations[t], tanh_c[t], cs[before])
            d_h = d_inputs[t] @ w_hh

        so ``d_inputs`` ``(T, B, 4H)`` gets every step's gate gradient (which
        is also that of ``inputs``; the bias's is its sum over ``T`` and ``B``).
        Every argument contiguous, of one float dtype.
        """
        raise NotImplementedError

    def lstm_weight_grad(
        self,
        d_w_ih: Strided,
        d_w_hh: Strided,
        d_gates: Strided,
        inputs: Strided,
        h_prev: Strided,
    ) -> None:
        """The gradients of a layer's two weights, over the whole sequence at once.

        ``d_gates`` ``(N, 4H)`` holds every step's gate gradient (what
        :meth:`lstm_backward` wrote, ``N = T * B`` rows), ``inputs`` ``(N, I)``
        the layer's input and ``h_prev`` ``(N, H)`` the state each step
        started from, their rows in the same order::

            d_w_ih = d_gates^T @ inputs    (4H, I)
            d_w_hh = d_gates^T @ h_prev    (4H, H)

        Two products that share their left operand, which a tier may read once
        for both. Every argument contiguous, of one float dtype.
        """
        raise NotImplementedError

    # ----------------------------------------------- convolution and pooling
    # Every kernel of this block works on 2-D images: ``(N, C, H, W)`` views.
    # The frontend runs the 1-D forms (``conv1d``, ``max_pool1d``) through them
    # with ``H = 1``. Every view is **contiguous** (row-major, the frontend makes
    # it so) and of one floating dtype (float32 or float64); ``indices`` are
    # int64. ``stride``, ``padding`` and ``dilation`` are ``(height, width)``
    # pairs; the padding is zeros (for pooling: positions outside the image are
    # never picked). The output's spatial size ``(OH, OW)`` is read from ``out``:
    # the frontend computes it (including ``ceil_mode``). For convolution,
    # ``OH = (H + 2 * ph - dh * (KH - 1) - 1) // sh + 1``, and output position
    # ``(oh, ow)`` with kernel tap ``(kh, kw)`` reads input row
    # ``oh * sh - ph + kh * dh`` and column ``ow * sw - pw + kw * dw``.
    def conv2d(
        self,
        out: Strided,
        input: Strided,
        weight: Strided,
        bias: Strided | None,
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        groups: int,
    ) -> None:
        """2-D cross-correlation (what deep learning calls convolution).

        ``out`` is ``(N, C_out, OH, OW)``, ``input`` ``(N, C_in, H, W)``,
        ``weight`` ``(C_out, C_in / groups, KH, KW)``, ``bias`` ``(C_out,)`` or
        None. Output channel ``o`` belongs to group ``g = o // (C_out / groups)``
        and sees input channels ``g * C_in / groups`` to ``(g + 1) * C_in / groups``::

            out[n, o, oh, ow] = bias[o] + sum over c, kh, kw of
                weight[o, c, kh, kw] * input[n, g * C_in / groups + c, ih, iw]

        with ``(ih, iw)`` as in the block comment; taps outside the image
        read 0. Sums accumulate in at least the input's precision.
        """
        raise NotImplementedError

    def conv2d_backward_input(
        self,
        grad_input: Strided,
        grad_output: Strided,
        weight: Strided,
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        groups: int,
    ) -> None:
        """The gradient of :meth:`conv2d` with respect to its input (overwrites ``grad_input``).

        ``grad_input[n, c, ih, iw]`` is the sum of ``weight[o, c', kh, kw] *
        grad_output[n, o, oh, ow]`` over every output position and tap that
        read ``input[n, c, ih, iw]`` in :meth:`conv2d`. Input positions no tap
        reads (cut off by the stride) get 0. This is also the forward pass of a
        transposed convolution.
        """
        raise NotImplementedError

    def conv2d_backward_weight(
        self,
        grad_weight: Strided,
        grad_output: Strided,
        input: Strided,
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
        groups: int,
    ) -> None:
        """The gradient of :meth:`conv2d` with respect to its weight (overwrites ``grad_weight``).

        ``grad_weight[o, c, kh, kw]`` is the sum over ``n, oh, ow`` of
        ``grad_output[n, o, oh, ow] * input[n, g * C_in / groups + c, ih, iw]``
        (0 where the tap falls outside the image). The bias gradient is a plain
        sum of ``grad_output``, which the frontend takes with :meth:`reduce`.
        """
        raise NotImplementedError

    def im2col(
        self,
        out: Strided,
        input: Strided,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
    ) -> None:
        """Unfold sliding blocks (``F.unfold``): ``out`` is ``(N, C * KH * KW, OH * OW)``.

        ``out[n, (c * KH + kh) * KW + kw, oh * OW + ow] = input[n, c, ih, iw]``,
        0 where ``(ih, iw)`` is outside the image; ``(OH, OW)`` follow the
        convolution formula.
        """
        raise NotImplementedError

    def col2im(
        self,
        out: Strided,
        columns: Strided,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
    ) -> None:
        """Fold blocks back into images (``F.fold``), the adjoint of :meth:`im2col`.

        ``out`` is ``(N, C, H, W)`` and ``columns`` ``(N, C * KH * KW, OH * OW)``:
        every element of ``columns`` is added to the input position
        :meth:`im2col` read it from (positions outside the image are dropped),
        so overlapping blocks sum. ``out`` is overwritten.
        """
        raise NotImplementedError

    def max_pool2d(
        self,
        out: Strided,
        indices: Strided,
        input: Strided,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        dilation: tuple[int, int],
    ) -> None:
        """Maximum of each window, and where it is.

        ``out`` and ``indices`` (int64) are ``(N, C, OH, OW)``. The window of
        ``(oh, ow)`` covers rows ``oh * sh - ph + kh * dh`` (``kh < KH``) and
        the matching columns, clipped to the image. ``indices`` holds the
        position of the maximum inside its ``(H, W)`` plane, ``ih * W + iw``;
        ties keep the first in row-major order, and a NaN counts as the
        maximum (the last NaN wins, as in PyTorch). An all ``-inf`` window
        gives ``-inf`` at its first position.
        """
        raise NotImplementedError

    def max_pool2d_backward(
        self, grad_input: Strided, grad_output: Strided, indices: Strided
    ) -> None:
        """Route each output gradient to its maximum: ``grad_input`` is overwritten.

        ``grad_input`` is ``(N, C, H, W)``; ``grad_output`` and ``indices`` are
        ``(N, C, OH, OW)``. ``grad_input[n, c].flat[indices[n, c, oh, ow]] +=
        grad_output[n, c, oh, ow]``, starting from zeros (windows that share
        a maximum add up).
        """
        raise NotImplementedError

    def avg_pool2d(
        self,
        out: Strided,
        input: Strided,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        count_include_pad: bool,
        divisor_override: int,
    ) -> None:
        """Mean of each window (``out`` is ``(N, C, OH, OW)``), PyTorch's divisor rule.

        The window of ``(oh, ow)`` starts at row ``hs = oh * sh - ph`` and ends
        at ``he = min(hs + KH, H + ph)`` (columns alike); its sum runs over the
        part inside the image. The divisor is ``divisor_override`` when it is
        not 0, else ``(he - hs) * (we - ws)`` with ``count_include_pad`` (the
        padding counts, a window sticking out past it does not), else the
        number of elements inside the image. A window with no element inside
        the image gives 0.
        """
        raise NotImplementedError

    def avg_pool2d_backward(
        self,
        grad_input: Strided,
        grad_output: Strided,
        kernel_size: tuple[int, int],
        stride: tuple[int, int],
        padding: tuple[int, int],
        count_include_pad: bool,
        divisor_override: int,
    ) -> None:
        """The gradient of :meth:`avg_pool2d`: ``grad_input`` (overwritten) gets
        ``grad_output[n, c, oh, ow] / divisor`` at every element of the window."""
        raise NotImplementedError

    # ------------------------------------------------------ batch normalisation
    # ``input`` and the gradients are contiguous ``(N, C, L)`` views (the
    # frontend flattens the spatial dimensions into L); ``mean``, ``invstd``,
    # ``weight``, ``bias`` and the parameter gradients are ``(C,)``. One float dtype.
    def batch_norm_stats(self, mean: Strided, var: Strided, input: Strided) -> None:
        """Per channel ``c``: the mean and the *biased* variance of ``input[:, c, :]``.

        PyTorch's arithmetic: the sum in double precision, the mean rounded to
        the dtype, then each deviation and its square in the dtype (a float32
        square past 3.4e38 is inf) added in double; the variance is that sum
        over the count (two passes, never ``E[x^2] - E[x]^2``).
        """
        raise NotImplementedError

    def batch_norm_update_stats(
        self,
        invstd: Strided,
        running_mean: Strided | None,
        running_var: Strided | None,
        mean: Strided,
        var: Strided,
        momentum: float,
        eps: float,
        count: int,
    ) -> None:
        """What training does with :meth:`batch_norm_stats`' answers, per channel ``c``.

        ``invstd[c] = 1 / sqrt(var[c] + eps)`` taken in double and rounded to
        the dtype; and, when ``running_mean`` and ``running_var`` are given
        (both or neither), the running statistics moved toward the batch's
        mean and *unbiased* variance (``count`` numbers per channel)::

            running_mean[c] = running_mean[c] * (1 - momentum) + mean[c] * momentum
            running_var[c]  = running_var[c] * (1 - momentum)
                              + var[c] * (momentum * count / (count - 1))

        with every product and sum rounded to the dtype, and each factor
        (computed in double) rounded to it first: the steps PyTorch's tensor
        operations take on a float32 buffer and a Python number. Every view is
        ``(C,)``, of the float dtype of ``mean``.
        """
        raise NotImplementedError

    def batch_norm_apply(
        self,
        out: Strided,
        input: Strided,
        mean: Strided,
        invstd: Strided,
        weight: Strided | None,
        bias: Strided | None,
    ) -> None:
        """``out[n, c, l] = (input[n, c, l] - mean[c]) * invstd[c] * weight[c] + bias[c]``.

        As PyTorch computes it: ``scale = invstd * weight`` and
        ``shift = bias - mean * scale`` per channel (rounded to the dtype),
        then ``fma(input, scale, shift)``, one rounding per element. A missing
        ``weight`` is 1, a missing ``bias`` 0.
        """
        raise NotImplementedError

    def batch_norm_backward(
        self,
        grad_input: Strided | None,
        grad_weight: Strided | None,
        grad_bias: Strided | None,
        grad_output: Strided,
        input: Strided,
        mean: Strided,
        invstd: Strided,
        weight: Strided | None,
        training: bool,
    ) -> None:
        """The gradients of :meth:`batch_norm_apply`; a None output is not wanted.

        With ``M = N * L``, ``dy = grad_output``, ``xhat = (x - mean) * invstd``
        and per-channel sums ``sum_dy = sum(dy)``, ``sum_dy_xhat = sum(dy * xhat)``
        (double precision): ``grad_bias = sum_dy``, ``grad_weight = sum_dy_xhat``
        and, with ``w = weight[c]`` (1 without weight)::

            training:   grad_input = w * invstd * (dy - sum_dy / M - xhat * sum_dy_xhat / M)
            evaluation: grad_input = w * invstd * dy

        In training ``mean`` and ``invstd`` came from the batch itself, so the
        gradient flows through them too; in evaluation they are constants
        (the running statistics).
        """
        raise NotImplementedError

    # -------------------------------------------------------------- optimizers
    # One fused kernel per optimizer: it updates a parameter and its state
    # buffers in place, element by element, following PyTorch's update rule.
    # ``param`` comes first (it is the output); every buffer is a contiguous
    # 1-D view of the same length and dtype; a buffer the configuration does not
    # use is None. Each kernel applies ``maximize`` itself, as documented.
    # The buffers are float32 or float64 (one dtype for all of them). The
    # arithmetic runs in double precision (Python's float) whatever that dtype
    # is; each value stored into a buffer is rounded to the buffer's dtype and
    # then used in that rounded form. The order of operations is the one
    # shown, so every tier gives the same numbers to float tolerance.
    def sgd_step(
        self,
        param: Strided,
        grad: Strided,
        momentum_buffer: Strided | None,
        lr: float,
        weight_decay: float,
        momentum: float,
        dampening: float,
        nesterov: bool,
        maximize: bool,
        first_step: bool,
    ) -> None:
        """One SGD step.

        Per element::

            g = -grad if maximize else grad
            if weight_decay != 0: g = g + weight_decay * param
            if momentum != 0:
                buf = g if first_step else momentum * buf + (1 - dampening) * g
                g = g + momentum * buf if nesterov else buf
            param = param - lr * g
        """
        raise NotImplementedError

    def adam_step(
        self,
        param: Strided,
        grad: Strided,
        exp_avg: Strided,
        exp_avg_sq: Strided,
        max_exp_avg_sq: Strided | None,
        step: int,
        lr: float,
        beta1: float,
        beta2: float,
        eps: float,
        weight_decay: float,
        decoupled_weight_decay: bool,
        amsgrad: bool,
        maximize: bool,
    ) -> None:
        """One Adam (or, with ``decoupled_weight_decay``, AdamW) step; ``step`` counts from 1.

        Per element::

            g = -grad if maximize else grad
            if decoupled_weight_decay: param = param * (1 - lr * weight_decay)
            elif weight_decay != 0: g = g + weight_decay * param
            m = beta1 * m + (1 - beta1) * g
            v = beta2 * v + (1 - beta2) * g * g
            if amsgrad: vmax = max(vmax, v); v_used = vmax  else: v_used = v
            bias1 = 1 - beta1 ** step;  bias2 = 1 - beta2 ** step
            denom = sqrt(v_used) / sqrt(bias2) + eps
            param = param - (lr / bias1) * m / denom
        """
        raise NotImplementedError

    def rmsprop_step(
        self,
        param: Strided,
        grad: Strided,
        square_avg: Strided,
        momentum_buffer: Strided | None,
        grad_avg: Strided | None,
        lr: float,
        alpha: float,
        eps: float,
        weight_decay: float,
        momentum: float,
        centered: bool,
        maximize: bool,
    ) -> None:
        """One RMSprop step.

        Per element::

            g = -grad if maximize else grad
            if weight_decay != 0: g = g + weight_decay * param
            sq = alpha * sq + (1 - alpha) * g * g
            if centered:
                ga = alpha * ga + (1 - alpha) * g
                avg = sqrt(max(sq - ga * ga, 0)) + eps  # rounding may dip below 0
            else:
                avg = sqrt(sq) + eps
            if momentum > 0:
                buf = momentum * buf + g / avg;  param = param - lr * buf
            else:
                param = param - lr * g / avg
        """
        raise NotImplementedError

    def adagrad_step(
        self,
        param: Strided,
        grad: Strided,
        state_sum: Strided,
        step: int,
        lr: float,
        lr_decay: float,
        weight_decay: float,
        eps: float,
        maximize: bool,
    ) -> None:
        """One Adagrad step; ``step`` counts from 1.

        Per element::

            g = -grad if maximize else grad
            if weight_decay != 0: g = g + weight_decay * param
            clr = lr / (1 + (step - 1) * lr_decay)
            sum = sum + g * g
            param = param - clr * g / (sqrt(sum) + eps)
        """
        raise NotImplementedError

    def adadelta_step(
        self,
        param: Strided,
        grad: Strided,
        square_avg: Strided,
        acc_delta: Strided,
        lr: float,
        rho: float,
        eps: float,
        weight_decay: float,
        maximize: bool,
    ) -> None:
        """One Adadelta step.

        Per element::

            g = -grad if maximize else grad
            if weight_decay != 0: g = g + weight_decay * param
            sq = rho * sq + (1 - rho) * g * g
            delta = sqrt(acc + eps) / sqrt(sq + eps) * g
            acc = rho * acc + (1 - rho) * delta * delta
            param = param - lr * delta
        """
        raise NotImplementedError

    # ------------------------------------------------------------------ random
    # Every random kernel draws from Philox 4x32-10 with a 64-bit ``seed`` (the
    # key) and a ``offset``: the index of the first 128-bit counter block to use.
    # Element i of ``out``, in row-major order, uses 32-bit word ``i % 4`` of
    # block ``offset + i // 4`` unless the kernel says otherwise. The frontend's
    # generator advances its offset by the number of blocks each call used, which
    # each kernel's docstring states, so every tier produces the same numbers.
    def random_uniform(self, out: Strided, seed: int, offset: int, low: float, high: float) -> None:
        """Uniform numbers in ``[low, high)``; ``ceil(numel / 4)`` blocks.

        A 32-bit word ``x`` becomes ``u = (x >> 8) * 2**-24`` for float32 and
        ``u = x * 2**-32`` for float64 (both in ``[0, 1)``), then
        ``low + u * (high - low)``, computed in float64 and rounded to out's
        dtype. Should rounding reach ``high``, the value becomes the largest
        number of that dtype below ``high`` (unless that is below ``low``).
        """
        raise NotImplementedError

    def random_normal(self, out: Strided, seed: int, offset: int, mean: float, std: float) -> None:
        """Normal numbers by the Box-Muller transform; ``ceil(numel / 2)`` blocks.

        Elements ``2k`` and ``2k+1`` come from block ``offset + k``: words 0 and
        1 give ``u1 = (x0 + 1) * 2**-32`` (in ``(0, 1]``) and
        ``u2 = x1 * 2**-32``; then ``r = sqrt(-2 log u1)`` and the two values are
        ``mean + std * r * cos(2 pi u2)`` and ``mean + std * r * sin(2 pi u2)``,
        evaluated left to right in float64 (``angle = 2.0 * pi * u2``).
        """
        raise NotImplementedError

    def random_integers(self, out: Strided, seed: int, offset: int, low: int, high: int) -> None:
        """Integers in ``[low, high)``; ``ceil(numel / 2)`` blocks.

        Element i uses block ``offset + i // 2``, words ``2 * (i % 2)`` and
        ``2 * (i % 2) + 1`` joined into a 64-bit ``x = lo + (hi << 32)``; the
        value is ``low + x % (high - low)``.
        """
        raise NotImplementedError

    def randperm(self, out: Strided, seed: int, offset: int) -> None:
        """A random permutation of ``0 .. n-1`` into the 1-D int64 ``out``.

        Fisher-Yates: start from the identity, then for ``i`` from ``n - 1``
        down to 1 swap ``out[i]`` with ``out[j]``, where ``j = x % (i + 1)`` and
        ``x`` is the 64-bit number that :meth:`random_integers` would draw for
        element ``n - 1 - i``. Uses ``ceil(n / 2)`` blocks.
        """
        raise NotImplementedError


# ------------------------------------------------------------ compositions
# A contract kernel that the contract defines as a loop of other kernels, run
# that way by the tiers with no fused version of it (the reference tier; the
# CUDA tier, from the host): one copy of the loop, through ``kernels``' own
# ``matmul``, ``binary``, ``copy`` and cell kernels.


def lstm_forward_steps(kernels, gates: Strided, hs, cs, activations, tanh_c, inputs, bias, w_hh,
                       reverse: bool) -> None:  # fmt: skip
    """:meth:`Kernels.lstm_forward` step by step, as its docstring defines it;
    ``gates`` is a ``(B, 4H)`` scratch matrix on the tier's device."""
    steps, batch, gate_size = inputs.shape
    w_hh_t = transposed(w_hh)
    if bias is not None:  # the same bias for every row: a stride-0 view
        bias = bias._replace(shape=(batch, gate_size), strides=(0, bias.strides[0]))
    for t in range(steps - 1, -1, -1) if reverse else range(steps):
        before, after = (t + 1, t) if reverse else (t, t + 1)
        kernels.matmul(gates, step_slot(hs, before), w_hh_t)  # h @ W_hh^T
        kernels.binary("add", gates, gates, step_slot(inputs, t))
        if bias is not None:
            kernels.binary("add", gates, gates, bias)
        kernels.lstm_cell(
            step_slot(hs, after),
            step_slot(cs, after),
            step_slot(activations, t),
            step_slot(tanh_c, t),
            gates,
            step_slot(cs, before),
        )


def lstm_backward_steps(kernels, d_inputs: Strided, d_h, d_c, d_outputs, activations, tanh_c, cs,
                        w_hh, reverse: bool) -> None:  # fmt: skip
    """:meth:`Kernels.lstm_backward` step by step, as its docstring defines it."""
    steps = d_inputs.shape[0]
    for t in range(steps) if reverse else range(steps - 1, -1, -1):
        before = t + 1 if reverse else t
        if d_outputs is not None:
            kernels.binary("add", d_h, d_h, step_slot(d_outputs, t))
        # d_c is read, then overwritten element by element with d_c * f.
        kernels.lstm_cell_backward(
            step_slot(d_inputs, t),
            d_c,
            d_h,
            d_c,
            step_slot(activations, t),
            step_slot(tanh_c, t),
            step_slot(cs, before),
        )
        kernels.matmul(d_h, step_slot(d_inputs, t), w_hh)  # d_gates @ W_hh


def lstm_weight_grad_products(kernels, d_w_ih: Strided, d_w_hh: Strided, d_gates: Strided,
                              inputs: Strided, h_prev: Strided) -> None:  # fmt: skip
    """:meth:`Kernels.lstm_weight_grad` as its docstring defines it: two products."""
    d_gates_t = transposed(d_gates)
    kernels.matmul(d_w_ih, d_gates_t, inputs)
    kernels.matmul(d_w_hh, d_gates_t, h_prev)


def transposed(view: Strided) -> Strided:
    """``view`` with its last two dimensions swapped (a matrix's transpose, or each
    matrix's in a batch): the strides swapped, nothing copied."""
    shape, strides = view.shape, view.strides
    return Strided(
        view.buffer,
        shape[:-2] + (shape[-1], shape[-2]),
        strides[:-2] + (strides[-1], strides[-2]),
        view.offset,
    )


def step_slot(buffer: Strided, index: int) -> Strided:
    """Entry ``index`` of the first dimension of ``buffer``: one step's slice."""
    return buffer._replace(
        shape=buffer.shape[1:],
        strides=buffer.strides[1:],
        offset=buffer.offset + index * buffer.strides[0],
    )


def contract_kernel_names() -> list[str]:
    """The names of every kernel in the contract, in declaration order."""
    return [
        name
        for name, value in vars(Kernels).items()
        if callable(value) and not name.startswith("_")
    ]


#: The kernel families every tier is made of, in the order their mixins are
#: composed (a family's module in each tier holds its mixin: the reference
#: tier's ``reference/<family>.py``, the fast tier's ``fast/<family>.py``, the
#: CUDA kernels' ``fast/cuda/kernels/<family>.py``).
KERNEL_FAMILIES = (
    "creation",
    "elementwise",
    "reductions",
    "linalg",
    "indexing",
    "nn",
    "rnn",
    "transformer",
    "conv",
    "optim",
    "random",
    "sorting",
    "threads",
)


def compose(name: str, families: dict[str, type], base: type = Kernels) -> type:
    """A tier's kernel class: one mixin per family of :data:`KERNEL_FAMILIES`, on ``base``.

    Every tier (reference, fast, CUDA) is made this one way, from the same
    family names, so a family missing from a tier is an error at import that
    names it, never a silent gap.

    Args:
        name: the tier's name (``kernels.name``); the class is ``<Name>Kernels``.
        families: family name -> the mixin that implements it.
        base: the class under the mixins (:class:`Kernels`, or the CUDA
            kernels' launch helpers).

    Raises:
        TypeError: ``families`` misses a family or names one that does not exist.
    """
    missing = [family for family in KERNEL_FAMILIES if family not in families]
    unknown = sorted(set(families) - set(KERNEL_FAMILIES))
    if missing or unknown:
        raise TypeError(
            f"the {name} tier must implement the kernel families {', '.join(KERNEL_FAMILIES)}; "
            f"missing: {', '.join(missing) or 'none'}; unknown: {', '.join(unknown) or 'none'}"
        )
    mixins = tuple(families[family] for family in KERNEL_FAMILIES)
    cls = type(f"{name.capitalize()}Kernels", (*mixins, base), {"name": name})
    cls.__doc__ = f"The {name} tier: the whole contract, one family of kernels per base class."
    return cls
