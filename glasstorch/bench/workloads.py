"""What is timed: the registry of workloads.

A :class:`Workload` knows how to draw its inputs (NumPy arrays, once) and how
to build, for each kind of backend, a callable that does the work once. The
callable is built outside the timed region (tensors converted, model made),
so only the work itself is timed.

Every workload carries the amount of work one call does, so a time becomes a
throughput: floating-point operations (GFLOP/s) for compute-bound work such as
matmul, bytes moved (GB/s) for memory-bound work such as elementwise ops,
where the arithmetic is trivial and the speed of memory is the limit. The
bytes counted are the least any implementation must move: each input read
once, each output written once.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from glasstorch.bench.backends import Backend

#: Draws a workload's inputs from a seeded generator.
InputMaker = Callable[[np.random.Generator], dict[str, np.ndarray]]
#: Builds, for one backend and the inputs, a callable that does the work once.
Builder = Callable[[Backend, dict[str, np.ndarray]], Callable[[], object]]

GFLOPS = "GFLOP/s"
GBPS = "GB/s"


class BackendUnavailable(Exception):
    """A backend cannot run a workload here (e.g. ``glasstorch.nn`` does not import)."""


@dataclass(frozen=True)
class Target:
    """A speed target for the fast tier against PyTorch (the issues' words; issue 26
    raised the models', the one-element add's and the 0-d index's to today's).

    Both bounds are on the **time ratio** fast / torch (lower is better): a
    throughput target of 0.5x PyTorch is a time ratio of at most 2.0.

    Attributes:
        text: the target as the issue words it.
        goal: the time ratio to reach.
        first_bar: the first, easier bar, or ``None``.
    """

    text: str
    goal: float
    first_bar: float | None = None

    def verdict(self, ratio: float | None) -> str:
        """``"met"``, ``"first bar met"``, ``"missed"``, or ``"-"`` with no ratio."""
        if ratio is None:
            return "-"
        if ratio <= self.goal:
            return "met"
        if self.first_bar is not None and ratio <= self.first_bar:
            return "first bar met"
        return "missed"


@dataclass(frozen=True)
class Workload:
    """One benchmark: a fixed piece of work at a fixed size.

    Attributes:
        name: unique id, e.g. ``"matmul-1024"``.
        family: what is computed, e.g. ``"matmul"``; several sizes share one.
        size: the size, for people (``"1024 x 1024 @ 1024 x 1024"``).
        description: one line on what one call does.
        make_inputs: draws the inputs (float32 NumPy arrays) from a generator.
        build: makes the callable for one backend (see :data:`Builder`).
        work: floating-point operations or bytes per call, or ``None``.
        unit: ``"GFLOP/s"``, ``"GB/s"``, or ``None`` when only the time matters.
        reference_ok: whether the reference tier runs it by default; the pure
            Python loops would take minutes on the big sizes.
        target: the issue's target for it, if any.
        rtol, atol: how close each backend's result must be to NumPy's.
        oracle: whose result the others are checked against: ``"numpy"`` (a
            hand-written NumPy version), or ``"torch"`` for a model with no
            NumPy version (PyTorch, built from the same weights).
    """

    name: str
    family: str
    size: str
    description: str
    make_inputs: InputMaker
    build: Builder
    work: float | None = None
    unit: str | None = None
    reference_ok: bool = True
    target: Target | None = None
    rtol: float = 1e-5
    atol: float = 1e-6
    oracle: str = "numpy"

    def throughput(self, seconds: float) -> float | None:
        """Work per second in :attr:`unit` (GFLOP/s or GB/s), or ``None``."""
        if self.work is None or seconds <= 0:
            return None
        return self.work / seconds / 1e9


# --------------------------------------------------------------------- helpers
def _normal(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(shape, dtype=np.float32)


def _simple(ops: dict[str, Callable], names: tuple[str, ...]) -> Builder:
    """A builder for a one-operation workload.

    Args:
        ops: for each backend kind, the operation on that backend's tensors.
        names: the input names, in the order the operation takes them.
    """

    def build(backend: Backend, inputs: dict[str, np.ndarray]) -> Callable[[], object]:
        op = ops[backend.kind]
        tensors = [backend.tensor(inputs[name]) for name in names]
        return lambda: op(*tensors)

    return build


def _same_everywhere(op: Callable) -> dict[str, Callable]:
    """The same Python expression works on all three libraries (``a @ b``, ``a.sum()``)."""
    return {"glasstorch": op, "numpy": op, "torch": op}


# ---------------------------------------------------------------------- matmul
def matmul(n: int, target: Target | None = None) -> Workload:
    """``a @ b`` for two float32 ``n x n`` matrices: ``2 n^3`` flops."""
    return Workload(
        name=f"matmul-{n}",
        family="matmul",
        size=f"{n}x{n} @ {n}x{n}",
        description=f"float32 matrix product of two {n} x {n} matrices",
        make_inputs=lambda rng: {"a": _normal(n, n)(rng), "b": _normal(n, n)(rng)},
        build=_simple(_same_everywhere(lambda a, b: a @ b), ("a", "b")),
        work=2.0 * n**3,
        unit=GFLOPS,
        reference_ok=n <= 128,  # ~0.5 s at 128 in pure Python, and 8x more per doubling
        target=target,
        rtol=1e-3,
        atol=1e-3,  # float32 dot products of n terms: rounding grows with n
    )


# ------------------------------------------------------------------ elementwise
def _count(n: int) -> str:
    """``4194304`` -> ``"4M"``, ``262144`` -> ``"256K"``."""
    for unit, scale in (("M", 2**20), ("K", 2**10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def add(n: int, target: Target | None = None) -> Workload:
    """``a + b`` for two float32 vectors of ``n`` elements: 12 bytes per element."""
    return Workload(
        name=f"add-{_count(n)}",
        family="add",
        size=f"{n:,} elements",
        description=f"elementwise sum of two float32 vectors of {n:,} elements",
        make_inputs=lambda rng: {"a": _normal(n)(rng), "b": _normal(n)(rng)},
        build=_simple(_same_everywhere(lambda a, b: a + b), ("a", "b")),
        work=3.0 * 4 * n,  # read a, read b, write the result: 4 bytes each
        unit=GBPS,
        target=target,
    )


def add_one_element(target: Target | None = None) -> Workload:
    """``a + b`` on one-element tensors: all overhead (dispatch, checks, allocation)."""
    return Workload(
        name="add-one-element",
        family="add",
        size="1 element",
        description="a + b on one-element float32 tensors: the fixed cost of one operation",
        make_inputs=lambda rng: {"a": _normal(1)(rng), "b": _normal(1)(rng)},
        build=_simple(_same_everywhere(lambda a, b: a + b), ("a", "b")),
        target=target,
    )


def index_0d(target: Target | None = None) -> Workload:
    """``x[i]`` with a 0-d integer tensor ``i``: what ``C[ix]`` costs in a makemore loop."""
    return Workload(
        name="index-0d",
        family="index",
        size="27x10, 0-d index",
        description="x[i]: one row of a float32 27 x 10 matrix picked by a 0-d int64 tensor",
        make_inputs=lambda rng: {
            "x": _normal(27, 10)(rng),
            "i": np.array(rng.integers(0, 27), dtype=np.int64),
        },
        build=_simple(_same_everywhere(lambda x, i: x[i]), ("x", "i")),
        target=target,
    )


def exp(n: int) -> Workload:
    """``exp(a)`` over ``n`` float32 elements: 8 bytes per element."""
    ops = {
        "glasstorch": lambda a: a.exp(),
        "numpy": np.exp,
        "torch": lambda a: a.exp(),
    }
    return Workload(
        name=f"exp-{_count(n)}",
        family="exp",
        size=f"{n:,} elements",
        description=f"elementwise exp of a float32 vector of {n:,} elements",
        make_inputs=lambda rng: {"a": _normal(n)(rng)},
        build=_simple(ops, ("a",)),
        work=2.0 * 4 * n,
        unit=GBPS,
    )


def _in_place(ops: dict[str, Callable], names: tuple[str, ...]) -> Builder:
    """A builder for an in-place operation on the first input.

    Each backend writes into a private copy of the inputs: tensors made by
    :meth:`Backend.tensor` share the NumPy arrays, which every backend (and
    the oracle) reads. Later calls overwrite the result of earlier ones; the
    first call's result is the one checked.
    """

    def build(backend: Backend, inputs: dict[str, np.ndarray]) -> Callable[[], object]:
        op = ops[backend.kind]
        tensors = [backend.tensor(inputs[name].copy()) for name in names]
        return lambda: op(*tensors)

    return build


def _numpy_add_(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a += 2.0 * b
    return a


def _numpy_fill_(a: np.ndarray) -> np.ndarray:
    a.fill(1.5)
    return a


def copy_(n: int) -> Workload:
    """``a.copy_(b)`` for two float32 vectors of ``n`` elements: 8 bytes per element."""
    ops = {
        "glasstorch": lambda a, b: a.copy_(b),
        "numpy": lambda a, b: (np.copyto(a, b), a)[1],
        "torch": lambda a, b: a.copy_(b),
    }
    return Workload(
        name=f"copy_-{_count(n)}",
        family="in-place",
        size=f"{n:,} elements",
        description=f"a.copy_(b): one float32 vector of {n:,} elements into another",
        make_inputs=lambda rng: {"a": _normal(n)(rng), "b": _normal(n)(rng)},
        build=_in_place(ops, ("a", "b")),
        work=2.0 * 4 * n,  # read b, write a
        unit=GBPS,
    )


def add_(n: int) -> Workload:
    """``a.add_(b, alpha=2)`` on float32 vectors of ``n`` elements: 12 bytes per element."""
    ops = {
        "glasstorch": lambda a, b: a.add_(b, alpha=2),
        "numpy": _numpy_add_,
        "torch": lambda a, b: a.add_(b, alpha=2),
    }
    return Workload(
        name=f"add_-alpha-{_count(n)}",
        family="in-place",
        size=f"{n:,} elements",
        description=f"a.add_(b, alpha=2) on float32 vectors of {n:,} elements",
        make_inputs=lambda rng: {"a": _normal(n)(rng), "b": _normal(n)(rng)},
        build=_in_place(ops, ("a", "b")),
        work=3.0 * 4 * n,  # read a and b, write a
        unit=GBPS,
    )


def fill_(n: int) -> Workload:
    """``a.fill_(1.5)`` on a float32 vector of ``n`` elements: 4 bytes per element."""
    ops = {
        "glasstorch": lambda a: a.fill_(1.5),
        "numpy": _numpy_fill_,
        "torch": lambda a: a.fill_(1.5),
    }
    return Workload(
        name=f"fill_-{_count(n)}",
        family="in-place",
        size=f"{n:,} elements",
        description=f"a.fill_(1.5) on a float32 vector of {n:,} elements",
        make_inputs=lambda rng: {"a": _normal(n)(rng)},
        build=_in_place(ops, ("a",)),
        work=4.0 * n,  # write a
        unit=GBPS,
    )


def total(n: int) -> Workload:
    """``a.sum()`` over ``n`` float32 elements: 4 bytes per element."""
    return Workload(
        name=f"sum-{_count(n)}",
        family="sum",
        size=f"{n:,} elements",
        description=f"sum of a float32 vector of {n:,} elements, to one number",
        make_inputs=lambda rng: {"a": _normal(n)(rng)},
        build=_simple(_same_everywhere(lambda a: a.sum()), ("a",)),
        work=4.0 * n,
        unit=GBPS,
        # Summation order differs between libraries (pairwise, blocked, float64
        # accumulators); the rounding of a float32 sum grows with n.
        rtol=1e-4,
        atol=1e-6 * n,
    )


def _numpy_softmax(a: np.ndarray) -> np.ndarray:
    """Softmax over dim 1, stable: subtract each row's max before ``exp``."""
    shifted = a - a.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def softmax(rows: int, cols: int) -> Workload:
    """Softmax over dim 1 of a ``rows x cols`` float32 matrix."""
    ops = {
        "glasstorch": lambda a: a.softmax(1),
        "numpy": _numpy_softmax,
        "torch": lambda a: a.softmax(1),
    }
    return Workload(
        name=f"softmax-{rows}x{cols}",
        family="softmax",
        size=f"{rows}x{cols}, dim 1",
        description=f"softmax over the rows of a float32 {rows} x {cols} matrix",
        make_inputs=lambda rng: {"a": _normal(rows, cols)(rng)},
        build=_simple(ops, ("a",)),
        work=2.0 * 4 * rows * cols,  # read the input once, write the output once
        unit=GBPS,
        rtol=1e-4,
    )


# ------------------------------------------------------------------------ model
def _mlp_inputs(batch: int, d_in: int, d_hidden: int, classes: int) -> InputMaker:
    """A batch, its labels and the two layers' initial weights (PyTorch's init range)."""

    def make(rng: np.random.Generator) -> dict[str, np.ndarray]:
        def uniform(fan_in: int, *shape: int) -> np.ndarray:
            bound = 1.0 / np.sqrt(fan_in)
            return rng.uniform(-bound, bound, shape).astype(np.float32)

        return {
            "x": rng.standard_normal((batch, d_in), dtype=np.float32),
            "y": rng.integers(0, classes, batch, dtype=np.int64),
            "w1": uniform(d_in, d_hidden, d_in),
            "b1": uniform(d_in, d_hidden),
            "w2": uniform(d_hidden, classes, d_hidden),
            "b2": uniform(d_hidden, classes),
        }

    return make


LEARNING_RATE = 0.01
MOMENTUM = 0.9


def _build_mlp_numpy(backend: Backend, inputs: dict[str, np.ndarray]) -> Callable[[], object]:
    """One training step written by hand in NumPy: the same math as the framework step.

    Forward: ``h = x W1^T + b1``, ``r = relu(h)``, ``z = r W2^T + b2``, loss =
    mean cross-entropy of ``z``. Backward by the chain rule, then SGD with
    momentum as PyTorch defines it: ``buf = momentum * buf + grad`` (``buf =
    grad`` on the first step), ``p -= lr * buf``.
    """
    x, y = inputs["x"], inputs["y"]
    params = [inputs[name].copy() for name in ("w1", "b1", "w2", "b2")]
    buffers: list[np.ndarray | None] = [None] * 4
    rows = np.arange(len(y))

    def step():
        w1, b1, w2, b2 = params
        h = x @ w1.T + b1
        r = np.maximum(h, 0)
        z = r @ w2.T + b2
        # loss = mean(logsumexp(z) - z[label]), computed stably
        shifted = z - z.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(axis=1, keepdims=True)
        loss = np.mean(np.log(s[:, 0]) - shifted[rows, y])
        # backward: d loss / d z = (softmax(z) - onehot(y)) / batch
        dz = e / s
        dz[rows, y] -= 1
        dz /= len(y)
        dw2 = dz.T @ r
        db2 = dz.sum(axis=0)
        dh = (dz @ w2) * (h > 0)
        dw1 = dh.T @ x
        db1 = dh.sum(axis=0)
        for i, (p, g) in enumerate(zip(params, (dw1, db1, dw2, db2))):
            if buffers[i] is None:
                buffers[i] = g.copy()
            else:
                buffers[i] *= MOMENTUM
                buffers[i] += g
            p -= LEARNING_RATE * buffers[i]
        return (loss, *params)

    return step


def _build_mlp_framework(backend: Backend, inputs: dict[str, np.ndarray]) -> Callable[[], object]:
    """One training step with the library's own nn and optim (glasstorch or torch)."""
    lib = backend.module
    try:  # glasstorch.nn and glasstorch.optim may still be under construction
        nn = importlib.import_module(f"{lib.__name__}.nn")
        optim = importlib.import_module(f"{lib.__name__}.optim")
        _ = (nn.Linear, nn.ReLU, nn.Sequential, nn.CrossEntropyLoss, optim.SGD)
    except Exception as error:
        raise BackendUnavailable(
            f"{lib.__name__}.nn / .optim unavailable ({type(error).__name__}: {error})"
        ) from error

    w1, w2 = inputs["w1"], inputs["w2"]
    model = nn.Sequential(
        nn.Linear(w1.shape[1], w1.shape[0]), nn.ReLU(), nn.Linear(w2.shape[1], w2.shape[0])
    )
    with lib.no_grad():  # start from the same weights as every other backend
        for param, name in zip(model.parameters(), ("w1", "b1", "w2", "b2")):
            param.copy_(lib.from_numpy(inputs[name]))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
    x, y = backend.tensor(inputs["x"]), backend.tensor(inputs["y"])

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return (loss, *model.parameters())

    return step


def _build_mlp(backend: Backend, inputs: dict[str, np.ndarray]) -> Callable[[], object]:
    if backend.kind == "numpy":
        return _build_mlp_numpy(backend, inputs)
    return _build_mlp_framework(backend, inputs)


def mlp_step(
    batch: int, d_in: int, d_hidden: int, classes: int, target: Target | None = None
) -> Workload:
    """One training step of Linear-ReLU-Linear with cross-entropy and SGD (momentum 0.9).

    The flops counted are the matmuls' (the rest is small): forward, and the
    weight gradients, for both layers; the input gradient for the second layer
    only (the batch itself needs no gradient).
    """
    layer1 = 2.0 * batch * d_in * d_hidden
    layer2 = 2.0 * batch * d_hidden * classes
    return Workload(
        name=f"mlp-step-{d_in}-{d_hidden}-{classes}-b{batch}",
        family="mlp-step",
        size=f"{d_in}-{d_hidden}-{classes}, batch {batch}",
        description=(
            "one training step: Linear-ReLU-Linear, CrossEntropyLoss, "
            f"SGD(lr={LEARNING_RATE}, momentum={MOMENTUM}); forward, backward, step"
        ),
        make_inputs=_mlp_inputs(batch, d_in, d_hidden, classes),
        build=_build_mlp,
        work=2 * layer1 + 3 * layer2,
        unit=GFLOPS,
        # pure Python needs ~0.3 us per multiply-add: a full-size step takes ~15 s
        reference_ok=batch * d_in * d_hidden <= 2**20,
        target=target,
        rtol=1e-3,
        atol=1e-5,
    )


# ------------------------------------------------------------- sequence models
#: Characters in the vocabulary of the sequence-model workloads (tiny Shakespeare's 65).
VOCABULARY = 65


def expected_result(workload: Workload, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The oracle's result for ``inputs``, which every backend's first result must match.

    NumPy's hand-written version for most workloads; PyTorch's, from the same
    weights, for a model with no NumPy version (``workload.oracle == "torch"``).

    Raises:
        BackendUnavailable: when the oracle is PyTorch and it is not installed.
    """
    from glasstorch.bench.backends import as_numpy, numpy_backend, torch_backend

    if workload.oracle == "numpy":
        return as_numpy(workload.build(numpy_backend(), inputs)())
    restore_threads = _thread_settings()
    torch = torch_backend(threads=1)
    if torch is None:
        raise BackendUnavailable(
            "PyTorch, which this workload is checked against, is not installed"
        )
    try:
        return as_numpy(workload.build(torch, inputs)())
    finally:
        restore_threads()


def _thread_settings():
    """A function that puts back the thread counts PyTorch and glasstorch have now.

    The oracle runs PyTorch on one thread. PyTorch and the fast tier load one
    OpenMP runtime between them (the same ``libgomp.so.1``), so
    ``torch.set_num_threads(1)`` also leaves glasstorch's kernels on one
    thread: without this, every backend timed after the oracle in the same
    process ran on one thread, whatever the harness's header said.
    """
    import glasstorch

    try:
        import torch
    except ImportError:
        torch = None
    torch_threads = None if torch is None else torch.get_num_threads()
    glasstorch_threads = glasstorch.get_num_threads()

    def restore() -> None:
        if torch is not None:
            torch.set_num_threads(torch_threads)
        glasstorch.set_num_threads(glasstorch_threads)

    return restore


def _token_inputs(batch: int, steps: int) -> InputMaker:
    """A batch of token sequences, the next-token targets, and a seed for the weights."""

    def make(rng: np.random.Generator) -> dict[str, np.ndarray]:
        tokens = rng.integers(0, VOCABULARY, (batch, steps + 1), dtype=np.int64)
        return {
            "x": tokens[:, :-1].copy(),
            "y": tokens[:, 1:].copy(),
            "weight_seed": np.array(int(rng.integers(0, 2**31))),
        }

    return make


def _load_same_weights(lib, model, seed: int) -> None:
    """Overwrite ``model``'s weights with values drawn from a seeded NumPy generator, in
    parameter order, so that glasstorch and PyTorch start from the same model. Each
    weight is uniform on ``[-k, k]``, ``k = 1 / sqrt(fan_in)``; norms keep ones and zeros."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name or name.split(".")[-2:-1] in (["ln_1"], ["ln_2"], ["ln_f"]):
                continue
            bound = 1.0 / np.sqrt(param.shape[-1])
            values = rng.uniform(-bound, bound, tuple(param.shape)).astype(np.float32)
            param.copy_(lib.from_numpy(values))


def _framework(backend: Backend):
    """``(lib, nn, F, optim)`` of a glasstorch or PyTorch backend; NumPy has no version."""
    if backend.kind == "numpy":
        raise BackendUnavailable("no NumPy version of this model: it is checked against PyTorch")
    lib = backend.module
    nn = importlib.import_module(f"{lib.__name__}.nn")
    optim = importlib.import_module(f"{lib.__name__}.optim")
    return lib, nn, nn.functional, optim


def _training_step(model, optimizer, loss_of, x, y):
    """One step: zero the gradients, forward, loss, backward, update. Returns the loss
    and this step's gradients (what is checked against the oracle)."""

    def step():
        optimizer.zero_grad()
        loss = loss_of(model(x), y)
        loss.backward()
        optimizer.step()
        return (loss, *(p.grad for p in model.parameters()))

    return step


def _build_lstm_char(hidden: int) -> Builder:
    def build(backend: Backend, inputs: dict[str, np.ndarray]) -> Callable[[], object]:
        lib, nn, F, optim = _framework(backend)

        class CharLSTM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(VOCABULARY, hidden)
                self.lstm = nn.LSTM(hidden, hidden, num_layers=2, batch_first=True)
                self.head = nn.Linear(hidden, VOCABULARY)

            def forward(self, tokens):
                output, _ = self.lstm(self.embed(tokens))
                return self.head(output)

        model = CharLSTM()
        _load_same_weights(lib, model, int(inputs["weight_seed"]))
        optimizer = optim.Adam(model.parameters(), lr=2e-3)

        def loss_of(logits, targets):
            return F.cross_entropy(logits.reshape(-1, VOCABULARY), targets.reshape(-1))

        x, y = lib.from_numpy(inputs["x"]), lib.from_numpy(inputs["y"])
        return _training_step(model, optimizer, loss_of, x, y)

    return build


def lstm_char_step(hidden: int, steps: int, batch: int, target: Target | None = None) -> Workload:
    """One training step of a character-level language model: Embedding(65, hidden),
    a 2-layer LSTM (hidden units each), Linear(hidden, 65), cross-entropy, Adam.

    The flops counted are the LSTM's matrix products (4 gates, 2 layers, input
    and hidden parts), forward and backward (twice forward).
    """
    per_layer = 2.0 * batch * steps * (4 * hidden) * (hidden + hidden)
    return Workload(
        name=f"lstm-char-step-h{hidden}-t{steps}-b{batch}",
        family="lstm-char-step",
        size=f"2 layers, hidden {hidden}, sequence {steps}, batch {batch}",
        description=(
            "one training step of a char LSTM: Embedding, 2-layer LSTM, Linear, "
            "cross-entropy, Adam(lr=2e-3)"
        ),
        make_inputs=_token_inputs(batch, steps),
        build=_build_lstm_char(hidden),
        work=3 * 2 * per_layer,
        unit=GFLOPS,
        reference_ok=hidden * steps * batch <= 2**12,
        target=target,
        rtol=1e-3,
        atol=1e-5,
        oracle="torch",
    )


def gpt_mini_model(lib, layers: int, heads: int, width: int, context: int):
    """A nanoGPT-style model built with ``lib`` (glasstorch or torch): token and position
    embeddings, pre-norm blocks (causal self-attention, a 4x MLP with tanh-GELU), a
    final LayerNorm and a linear head over the ``VOCABULARY`` tokens."""
    nn = importlib.import_module(f"{lib.__name__}.nn")
    F = nn.functional

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(width, 3 * width)
            self.c_proj = nn.Linear(width, width)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(x).split(width, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(width)
            self.attn = SelfAttention()
            self.ln_2 = nn.LayerNorm(width)
            self.mlp = nn.Sequential(
                nn.Linear(width, 4 * width),
                nn.GELU(approximate="tanh"),
                nn.Linear(4 * width, width),
            )

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCABULARY, width)
            self.wpe = nn.Embedding(context, width)
            self.blocks = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(width)
            self.lm_head = nn.Linear(width, VOCABULARY, bias=False)

        def forward(self, tokens):
            positions = lib.arange(tokens.shape[1])
            x = self.wte(tokens) + self.wpe(positions)
            for block in self.blocks:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    return GPT()


def _build_gpt_mini(layers: int, heads: int, width: int, context: int) -> Builder:
    def build(backend: Backend, inputs: dict[str, np.ndarray]) -> Callable[[], object]:
        lib, nn, F, optim = _framework(backend)
        model = gpt_mini_model(lib, layers, heads, width, context)
        _load_same_weights(lib, model, int(inputs["weight_seed"]))
        optimizer = optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

        def loss_of(logits, targets):
            return F.cross_entropy(logits.view(-1, VOCABULARY), targets.view(-1))

        x, y = lib.from_numpy(inputs["x"]), lib.from_numpy(inputs["y"])
        return _training_step(model, optimizer, loss_of, x, y)

    return build


def gpt_mini_step(
    layers: int, heads: int, width: int, context: int, batch: int, target: Target | None = None
) -> Workload:
    """One training step of a nanoGPT-style model: token and position embeddings,
    pre-norm blocks (causal self-attention, a 4x MLP with tanh-GELU), a final
    LayerNorm and a linear head, cross-entropy, AdamW.

    The flops counted are the matrix products (the linear layers and the two
    attention products), forward and backward (twice forward).
    """
    tokens = batch * context
    linear = 2.0 * tokens * width * (3 * width + width + 4 * width + 4 * width)
    attention = 2.0 * 2 * batch * context * context * width
    head = 2.0 * tokens * width * VOCABULARY
    return Workload(
        name=f"gpt-mini-step-l{layers}-w{width}-t{context}-b{batch}",
        family="gpt-mini-step",
        size=f"{layers} layers, {heads} heads, width {width}, context {context}, batch {batch}",
        description=(
            "one training step of a GPT-mini: embeddings, pre-norm attention/MLP blocks, "
            "LayerNorm, Linear head, cross-entropy, AdamW(lr=3e-4, weight_decay=0.1)"
        ),
        make_inputs=_token_inputs(batch, context),
        build=_build_gpt_mini(layers, heads, width, context),
        work=3 * (layers * (linear + attention) + head),
        unit=GFLOPS,
        reference_ok=width * context * batch <= 2**11,
        target=target,
        rtol=1e-3,
        atol=1e-5,
        oracle="torch",
    )


# ----------------------------------------------------------- convolutional nets
# Two training steps of convolutional networks, written once for glasstorch and
# PyTorch (the model takes the library's ``nn``). NumPy has no convolution, so
# these workloads have no NumPy column: PyTorch's step from the same weights is
# the oracle every backend is checked against before it is timed.
def _lenet5(nn):
    """LeNet-5 for 1 x 28 x 28 images (MNIST's size), with ReLU and max pooling."""
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10),
    )  # fmt: skip


def _resnet20(nn):
    """ResNet-20 for 3 x 32 x 32 images (He et al. 2016, CIFAR-10): a 3x3
    convolution, three stages of three basic blocks (16, 32, 64 channels; the
    later stages start with stride 2 and a 1x1 projection shortcut), global
    average pooling and a linear classifier."""

    class BasicBlock(nn.Module):
        def __init__(self, c_in: int, c_out: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.relu = nn.ReLU()
            if stride == 1 and c_in == c_out:
                self.shortcut = nn.Identity()
            else:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
                )

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + self.shortcut(x))

    layers = [nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    c_in = 16
    for c_out, stride in ((16, 1), (32, 2), (64, 2)):
        for block in range(3):
            layers.append(BasicBlock(c_in, c_out, stride if block == 0 else 1))
            c_in = c_out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


def _cnn_inputs(make_model, image: tuple[int, ...], batch: int) -> InputMaker:
    """A batch, its labels and every parameter and buffer of the model, drawn once.

    The weights follow PyTorch's default ranges (uniform in +-1/sqrt(fan_in)),
    batch norms start at weight 1 and bias 0, running mean 0 and variance 1.
    """

    def make(rng: np.random.Generator) -> dict[str, np.ndarray]:
        import glasstorch.nn as gnn

        arrays = {
            "x": rng.standard_normal((batch, *image), dtype=np.float32),
            "y": rng.integers(0, 10, batch, dtype=np.int64),
        }
        for name, value in make_model(gnn).state_dict().items():
            shape = tuple(value.shape)
            if name.endswith("num_batches_tracked"):
                array = np.zeros(shape, np.int64)
            elif name.endswith("running_var") or (name.endswith("weight") and len(shape) == 1):
                array = np.ones(shape, np.float32)
            elif name.endswith("running_mean") or len(shape) == 1:
                array = np.zeros(shape, np.float32) if "bn" in name else None
                if array is None:  # a layer's bias
                    array = rng.uniform(-0.1, 0.1, shape).astype(np.float32)
            else:
                bound = 1.0 / np.sqrt(np.prod(shape[1:]))
                array = rng.uniform(-bound, bound, shape).astype(np.float32)
            arrays["state:" + name] = array
        return arrays

    return make


def _cnn_step(make_model, lib, nn, optim, inputs, tensor):
    """One SGD training step of the model, in ``lib``, from the inputs' weights."""
    model = make_model(nn)
    state = {k[len("state:") :]: lib.from_numpy(v.copy()) for k, v in inputs.items() if ":" in k}
    model.load_state_dict(state)
    model.train()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=MOMENTUM)
    x, y = tensor(inputs["x"]), tensor(inputs["y"])

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return (loss, *model.parameters())

    return step


def _cnn_builder(make_model) -> Builder:
    def build(backend: Backend, inputs: dict[str, np.ndarray]) -> Callable[[], object]:
        if backend.kind == "numpy":
            raise BackendUnavailable("NumPy has no convolution (PyTorch is this workload's oracle)")
        lib = backend.module
        nn = importlib.import_module(f"{lib.__name__}.nn")
        optim = importlib.import_module(f"{lib.__name__}.optim")
        return _cnn_step(make_model, lib, nn, optim, inputs, backend.tensor)

    return build


def cnn_step(
    name: str, make_model, image: tuple[int, ...], batch: int, description: str, target=None
) -> Workload:
    """One training step of a convolutional network: forward, backward, SGD (momentum 0.9)."""
    return Workload(
        name=f"{name}-step-b{batch}",
        family=f"{name}-step",
        size=f"{'x'.join(str(s) for s in image)}, batch {batch}",
        description=description,
        make_inputs=_cnn_inputs(make_model, image, batch),
        build=_cnn_builder(make_model),
        reference_ok=False,  # minutes per step in pure Python
        target=target,
        rtol=1e-3,
        atol=1e-4,
        oracle="torch",
    )


def lenet5_step(batch: int = 64, target: Target | None = None) -> Workload:
    """LeNet-5 training step, 1x28x28, SGD."""
    return cnn_step(
        "lenet5", _lenet5, (1, 28, 28), batch,
        "one training step of LeNet-5 (two 5x5 convolutions with max pooling, three "
        f"linear layers), CrossEntropyLoss, SGD(lr={LEARNING_RATE}, momentum={MOMENTUM})",
        target,
    )  # fmt: skip


def resnet20_step(batch: int = 32, target: Target | None = None) -> Workload:
    """ResNet-20 (CIFAR) training step, 3x32x32."""
    return cnn_step(
        "resnet20", _resnet20, (3, 32, 32), batch,
        "one training step of ResNet-20 for CIFAR (19 3x3 convolutions with batch norm, "
        f"global average pooling), CrossEntropyLoss, SGD(lr={LEARNING_RATE}, "
        f"momentum={MOMENTUM})",
        target,
    )  # fmt: skip


# --------------------------------------------------------------------- registry
#: The targets of issue 4 (fast tier vs PyTorch), as time ratios.
MATMUL_TARGET = Target("1.0x PyTorch's throughput (first bar 0.5x)", goal=1.0, first_bar=2.0)
MLP_TARGET = Target("at most PyTorch's time (first bar 1.25x)", goal=1.0, first_bar=1.25)
ADD_TARGET = Target("0.9x PyTorch's bandwidth or better", goal=1 / 0.9)
OVERHEAD_TARGET = Target("within 2x PyTorch's per-op time (first bar 3x)", goal=2.0, first_bar=3.0)
INDEX_TARGET = Target("within 1.2x PyTorch's per-op time (first bar 5x)", goal=1.2, first_bar=5.0)
LSTM_TARGET = Target("at most PyTorch's time (first bar 1.25x)", goal=1.0, first_bar=1.25)
GPT_TARGET = Target("at most PyTorch's time (first bar 1.5x)", goal=1.0, first_bar=1.5)
LENET_TARGET = Target("at most PyTorch's time (first bar 1.5x)", goal=1.0, first_bar=1.5)
RESNET_TARGET = Target("at most PyTorch's time (first bar 1.25x)", goal=1.0, first_bar=1.25)


def workload_registry(quick: bool = False) -> list[Workload]:
    """Every workload, in table order.

    Args:
        quick: small sizes, for a run of seconds (tests, the docs' reference table).
    """
    if quick:
        return [
            matmul(64),
            matmul(128),
            add(2**18),
            add_one_element(OVERHEAD_TARGET),
            index_0d(INDEX_TARGET),
            exp(2**18),
            copy_(2**18),
            add_(2**18),
            fill_(2**18),
            total(2**18),
            softmax(256, 256),
            mlp_step(32, 784, 32, 10),
            # sequence models
            lstm_char_step(hidden=32, steps=8, batch=4),
            gpt_mini_step(layers=2, heads=2, width=32, context=16, batch=4),
        ]
    return [
        matmul(128),
        matmul(256),
        matmul(512),
        matmul(1024, MATMUL_TARGET),
        matmul(2048, MATMUL_TARGET),
        add(2**24),  # 192 MB a call: beyond the caches, the report's memory comparison
        add(2**22, ADD_TARGET),
        add(2**20),
        add_one_element(OVERHEAD_TARGET),
        index_0d(INDEX_TARGET),
        exp(2**20),
        copy_(2**22),
        add_(2**22),
        fill_(2**22),
        total(2**22),
        softmax(1024, 1024),
        mlp_step(128, 784, 256, 10, MLP_TARGET),
        # convolutional networks
        lenet5_step(64, LENET_TARGET),
        resnet20_step(32, RESNET_TARGET),
        # sequence models
        lstm_char_step(hidden=256, steps=64, batch=32, target=LSTM_TARGET),
        gpt_mini_step(layers=4, heads=4, width=128, context=64, batch=16, target=GPT_TARGET),
    ]


def select_workloads(patterns: list[str] | None, quick: bool = False) -> list[Workload]:
    """The registry's workloads whose name contains any of ``patterns`` (all if none).

    Raises:
        ValueError: when a pattern matches nothing, with the names there are.
    """
    registry = workload_registry(quick)
    if not patterns:
        return registry
    for pattern in patterns:
        if not any(pattern in w.name for w in registry):
            names = ", ".join(w.name for w in registry)
            raise ValueError(f"no workload name contains {pattern!r}; the workloads are: {names}")
    return [w for w in registry if any(pattern in w.name for pattern in patterns)]
