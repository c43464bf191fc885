"""glasstorch: PyTorch's imperative API, built to be read.

``import glasstorch as torch`` runs PyTorch programs in the supported subset.
The tier that runs the kernels is chosen by ``GLASSTORCH_TIER`` (``reference``:
pure Python loops; ``fast``: C and CUDA) and reported by ``glasstorch.tier``.
Every public name is imported below, one block per family of operations.
"""

from __future__ import annotations

from math import e, inf, nan, pi

from glasstorch import (
    _checkout,  # noqa: F401  (first: finds the tiers in a checkout)
    _tier,
    accelerator,
    amp,
    autograd,
    backends,
    cuda,
    datasets,
    distributed,
    distributions,
    linalg,
    nn,
    optim,
    profiler,
    sparse,
    utils,
)
from glasstorch._dtype import (
    bfloat16,
    can_cast,
    dtype,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int32,
    int64,
    promote_types,
    result_type,
    set_default_dtype,
    uint8,
)
from glasstorch._dtype import (  # noqa: A004 - PyTorch's names shadow builtins on purpose
    bool_ as bool,
)
from glasstorch._dtype import (
    float16 as half,
)
from glasstorch._dtype import (
    float32 as float,
)
from glasstorch._dtype import (
    float64 as double,
)
from glasstorch._dtype import (
    int32 as int,
)
from glasstorch._dtype import (
    int64 as long,
)
from glasstorch._shape import broadcast_shapes
from glasstorch._tier import get_num_threads, set_num_threads
from glasstorch.amp import autocast
from glasstorch.autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from glasstorch.autograd import profiler as _autograd_profiler  # noqa: F401 (its old name)
from glasstorch.autograd.grad_mode import inference_mode, is_inference_mode_enabled
from glasstorch.compiler import compile  # noqa: A004 - PyTorch's name
from glasstorch.devices import get_default_device, set_default_device
from glasstorch.linalg import dist
from glasstorch.linalg import tensor_norm as norm
from glasstorch.nn.functional import cosine_similarity

# Methods are attached to Tensor by this import.
from glasstorch.ops import methods as _methods  # noqa: F401  (isort: keep after tensor)
from glasstorch.ops import out as _out

# Creating tensors.
from glasstorch.ops.creation import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from glasstorch.ops.einsum import einsum

# Indexing.
from glasstorch.ops.indexing import (
    argwhere,
    flip,
    gather,
    index_add,
    index_copy,
    index_put,
    index_select,
    masked_select,
    nonzero,
    scatter,
    scatter_add,
    take,
    take_along_dim,
)
from glasstorch.ops.legacy import (
    BoolTensor,
    ByteTensor,
    DoubleTensor,
    FloatTensor,
    IntTensor,
    LongTensor,
)

# Matrix products.
from glasstorch.ops.linalg import (
    addbmm,
    addmm,
    addmv,
    baddbmm,
    bmm,
    cdist,
    corrcoef,
    cov,
    cross,
    dot,
    ger,
    get_float32_matmul_precision,
    inner,
    kron,
    matmul,
    mm,
    mv,
    outer,
    set_float32_matmul_precision,
    trace,
    vdot,
)

# Elementwise operations.
from glasstorch.ops.pointwise import (
    abs,  # noqa: A004
    add,
    addcdiv,
    addcmul,
    allclose,
    arctan2,
    atan2,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    ceil,
    clamp,
    clamp_max,
    clamp_min,
    clip,
    clone,
    copysign,
    cos,
    deg2rad,
    div,
    eq,
    equal,
    erf,
    exp,
    expm1,
    floor,
    floor_divide,
    fmod,
    frac,
    ge,
    greater,
    greater_equal,
    gt,
    heaviside,
    hypot,
    isclose,
    isfinite,
    isinf,
    isnan,
    le,
    lerp,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logit,
    lt,
    masked_fill,
    maximum,
    minimum,
    mul,
    nan_to_num,
    nan_to_num_,
    ne,
    neg,
    negative,
    not_equal,
    pow,  # noqa: A004
    rad2deg,
    reciprocal,
    relu,
    remainder,
    round,  # noqa: A004
    rsqrt,
    sgn,
    sigmoid,
    sign,
    signbit,
    sin,
    sqrt,
    square,
    sub,
    tanh,
    true_divide,
    trunc,
    where,
    xlogy,
)
from glasstorch.ops.properties import is_floating_point, is_tensor, numel

# Reductions.
from glasstorch.ops.reduction import (
    all,  # noqa: A004
    amax,
    amin,
    aminmax,
    any,  # noqa: A004
    argmax,
    argmin,
    count_nonzero,
    log_softmax,
    logsumexp,
    max,  # noqa: A004
    mean,
    min,  # noqa: A004
    nanmean,
    nansum,
    prod,
    softmax,
    std,
    std_mean,
    sum,  # noqa: A004
    var,
    var_mean,
)

# Sampling.
from glasstorch.ops.sampling import (
    bernoulli,
    multinomial,
    normal,
)

# Running (scan) operations.
from glasstorch.ops.scan import (
    cummax,
    cummin,
    cumprod,
    cumsum,
    diff,
    logcumsumexp,
)

# Other shape operations.
from glasstorch.ops.shape import (
    block_diag,
    cartesian_prod,
    column_stack,
    diag,
    diag_embed,
    diagonal,
    dstack,
    fliplr,
    flipud,
    hstack,
    meshgrid,
    moveaxis,
    movedim,
    repeat_interleave,
    roll,
    rot90,
    tensor_split,
    tile,
    tril,
    tril_indices,
    triu,
    triu_indices,
    vstack,
)

# Order statistics.
from glasstorch.ops.sorting import (
    argsort,
    bincount,
    bucketize,
    histc,
    median,
    msort,
    nanmedian,
    nanquantile,
    quantile,
    searchsorted,
    sort,
    topk,
    unique,
    unique_consecutive,
)

# Sparse COO tensors (torch.sparse is the glasstorch.sparse package).
from glasstorch.ops.sparse import sparse_coo_tensor
from glasstorch.ops.sparse import sparse_mm as spmm

# Views and joins.
from glasstorch.ops.views import (
    as_strided,
    broadcast_to,
    cat,
    chunk,
    concat,
    concatenate,
    flatten,
    narrow,
    permute,
    ravel,
    reshape,
    select,
    split,
    squeeze,
    stack,
    swapaxes,
    swapdims,
    t,
    transpose,
    unbind,
    unflatten,
    unsqueeze,
)
from glasstorch.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from glasstorch.serialization import load, save
from glasstorch.tensor import Size, Tensor, device, layout, sparse_coo, strided
from glasstorch.utils.dlpack import from_dlpack

#: The active tier's name: ``"reference"`` or ``"fast"``.
tier: str = _tier.tier

__version__ = "0.1.0"

# out= on the public functions, keepdims= and axis= on the reductions (see glasstorch/ops/out.py).
for _name in _out.WITH_OUT:
    globals()[_name] = _out.accepts_out(globals()[_name])
for _name in _out.KEEPDIMS_METHODS:
    setattr(Tensor, _name, _out.accepts_keepdims(getattr(Tensor, _name)))
for _name in _out.AXIS_FUNCTIONS:
    globals()[_name] = _out.accepts_keepdims(globals()[_name])


# glasstorch.multiprocessing (torch.multiprocessing, which registers the
# pickling rules that send tensors as shared memory) is imported with
# utils.data, whose DataLoader uses it.


#: The public names, one list: what ``from glasstorch import *`` gives.
__all__ = [
    "abs", "accelerator", "add", "addbmm", "addcdiv", "addcmul", "addmm", "addmv", "all",
    "allclose", "amax", "amin", "aminmax", "amp", "any", "arange", "arctan2", "argmax",
    "argmin", "argsort", "argwhere", "as_strided", "as_tensor", "atan2", "autocast", "autograd",
    "backends", "baddbmm", "bernoulli", "bfloat16", "bincount", "bitwise_and", "bitwise_not",
    "bitwise_or", "bitwise_xor", "block_diag", "bmm", "bool", "BoolTensor", "broadcast_shapes",
    "broadcast_to", "bucketize", "ByteTensor", "can_cast", "cartesian_prod", "cat", "cdist",
    "ceil", "chunk", "clamp", "clamp_max", "clamp_min", "clip", "clone", "column_stack",
    "compile", "concat", "concatenate", "copysign", "corrcoef", "cos", "cosine_similarity",
    "count_nonzero", "cov", "cross", "cuda", "cummax", "cummin", "cumprod", "cumsum",
    "datasets", "default_generator", "deg2rad", "device", "devices", "diag", "diag_embed",
    "diagonal", "diff", "dist", "distributed", "distributions", "div", "dot", "double",
    "DoubleTensor",
    "dstack", "dtype", "e", "einsum", "empty", "empty_like", "enable_grad", "eq", "equal",
    "erf", "exp", "expm1", "eye", "finfo", "flatten", "flip", "fliplr", "flipud", "float",
    "float16", "float32", "float64", "FloatTensor", "floor", "floor_divide", "fmod", "frac",
    "from_dlpack", "from_numpy", "full", "full_like", "gather", "ge", "Generator", "ger",
    "get_default_device", "get_default_dtype", "get_float32_matmul_precision",
    "get_num_threads", "get_rng_state", "greater", "greater_equal", "gt", "half", "heaviside",
    "histc", "hstack", "hypot", "iinfo", "index_add", "index_copy", "index_put", "index_select",
    "inf", "inference_mode", "initial_seed", "inner", "int", "int32", "int64", "IntTensor",
    "is_floating_point", "is_grad_enabled", "is_inference_mode_enabled", "is_tensor", "isclose",
    "isfinite", "isinf", "isnan", "kron", "le", "lerp", "less", "less_equal", "linalg",
    "linspace", "load", "log", "log10", "log1p", "log2", "log_softmax", "logaddexp",
    "logcumsumexp", "logical_and", "logical_not", "logical_or", "logical_xor", "logit",
    "logsumexp", "long", "LongTensor", "lt", "manual_seed", "masked_fill", "masked_select",
    "matmul", "max", "maximum", "mean", "median", "meshgrid", "min", "minimum", "mm",
    "moveaxis", "movedim", "msort", "mul", "multinomial", "multiprocessing", "mv", "nan",
    "nan_to_num", "nan_to_num_", "nanmean", "nanmedian", "nanquantile", "nansum", "narrow",
    "ne", "neg", "negative", "nn", "no_grad", "nonzero", "norm", "normal", "not_equal", "numel",
    "ones", "ones_like", "optim", "outer", "permute", "pi", "pow", "prod", "profiler",
    "promote_types", "quantile", "rad2deg", "rand", "rand_like", "randint", "randint_like",
    "randn", "randn_like", "random", "randperm", "ravel", "reciprocal", "relu", "remainder",
    "repeat_interleave", "reshape", "result_type", "roll", "rot90", "round", "rsqrt", "save",
    "scatter", "scatter_add", "searchsorted", "seed", "select", "serialization",
    "set_default_device", "set_default_dtype", "set_float32_matmul_precision",
    "set_grad_enabled", "set_num_threads", "set_rng_state", "sgn", "sigmoid", "sign", "signbit",
    "sin", "Size", "softmax", "sort", "sparse", "sparse_coo", "sparse_coo_tensor", "spmm",
    "split", "sqrt", "square", "squeeze", "stack", "std", "strided", "layout",
    "std_mean", "sub", "sum", "swapaxes", "swapdims", "t", "take", "take_along_dim", "tanh",
    "Tensor", "tensor", "tensor_split", "tier", "tile", "topk", "trace", "transpose", "tril",
    "tril_indices", "triu", "triu_indices", "true_divide", "trunc", "uint8", "unbind",
    "unflatten", "unique", "unique_consecutive", "unsqueeze", "utils", "var", "var_mean",
    "vdot", "vstack", "where", "xlogy", "zeros", "zeros_like"
]  # fmt: skip
