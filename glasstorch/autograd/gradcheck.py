"""Check analytical gradients against finite differences.

``gradcheck`` builds the full Jacobian of a function twice: numerically, by
nudging each input element by ``±eps`` (central differences), and analytically,
by running backward once per output element. The two must agree within
``atol + rtol * |numerical|``. Use float64 inputs: float32 is too coarse for
finite differences.
"""

from __future__ import annotations

import numpy as np


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` when the two Jacobians disagree."""


def _as_tuple(x) -> tuple:
    return x if isinstance(x, tuple) else (x,)


def _flat_outputs(function, inputs) -> list:
    from glasstorch.tensor import Tensor

    return [o for o in _as_tuple(function(*inputs)) if isinstance(o, Tensor)]


def _output_values(function, inputs) -> list[list[float]]:
    """Every output's values, flattened, as Python floats."""
    return [o.detach().double().reshape(-1).tolist() for o in _flat_outputs(function, inputs)]


class _Elements:
    """Read and write single elements of a tensor in place, bypassing autograd.

    On the CPU through a NumPy array that shares the tensor's memory; on a
    device (which NumPy cannot see) through indexed reads and writes.
    """

    def __init__(self, tensor) -> None:
        self.tensor = tensor.detach()
        self.shared = None if tensor.is_cuda else self.tensor.numpy()

    def __getitem__(self, position) -> float:
        if self.shared is not None:
            return self.shared[position].item()
        return self.tensor[position].item()

    def __setitem__(self, position, value: float) -> None:
        if self.shared is not None:
            self.shared[position] = value
        else:
            self.tensor[position] = value


def _numerical_jacobian(function, inputs, index: int, eps: float) -> list[list[list[float]]]:
    """J[out][i][j]: d(output element i) / d(input element j), by central differences."""
    target = inputs[index]
    values = _Elements(target)
    flat_positions = list(np.ndindex(tuple(target.shape)))
    columns = []
    for position in flat_positions:
        original = values[position]
        values[position] = original + eps
        plus = _output_values(function, inputs)
        values[position] = original - eps
        minus = _output_values(function, inputs)
        values[position] = original
        columns.append(
            [[(p - m) / (2 * eps) for p, m in zip(po, mo)] for po, mo in zip(plus, minus)]
        )
    # Transpose columns (one per input element) into rows (one per output element).
    jacobians = []
    for out_index in range(len(columns[0]) if columns else 0):
        rows = len(columns[0][out_index])
        jacobians.append(
            [[columns[j][out_index][i] for j in range(len(columns))] for i in range(rows)]
        )
    return jacobians


def _analytical_jacobian(function, inputs, index: int) -> list[list[list[float]]]:
    """J[out][i][j] by one backward pass per output element (a one-hot grad_output)."""
    from glasstorch.autograd import grad as autograd_grad
    from glasstorch.ops.creation import zeros

    outputs = _flat_outputs(function, inputs)
    target = inputs[index]
    jacobians = []
    for output in outputs:
        rows = []
        for i in range(output.numel()):
            if not output.requires_grad:
                rows.append([0.0] * target.numel())
                continue
            one_hot = zeros(tuple(output.shape), dtype=output.dtype, device=output.device)
            one_hot.view(-1)[i] = 1
            (g,) = autograd_grad(output, target, one_hot, retain_graph=True, allow_unused=True)
            rows.append(
                [0.0] * target.numel() if g is None else g.detach().reshape(-1).double().tolist()
            )
        jacobians.append(rows)
    return jacobians


def gradcheck(
    func,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    **_unused,
) -> bool:
    """True when ``func``'s gradients match finite differences for every input needing grad.

    Args:
        func: a function of tensors returning a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors (and other arguments).
        eps: the finite-difference step.
        atol, rtol: the allowed absolute and relative difference.
        raise_exception: raise :class:`GradcheckError` on a mismatch instead of
            returning False.
    """
    from glasstorch.tensor import Tensor

    inputs = _as_tuple(inputs)
    for index, target in enumerate(inputs):
        if not (isinstance(target, Tensor) and target.requires_grad):
            continue
        numerical = _numerical_jacobian(func, inputs, index, eps)
        analytical = _analytical_jacobian(func, inputs, index)
        for out_index, (num, ana) in enumerate(zip(numerical, analytical)):
            for i, (num_row, ana_row) in enumerate(zip(num, ana)):
                for j, (n, a) in enumerate(zip(num_row, ana_row)):
                    if not abs(a - n) <= atol + rtol * abs(n):
                        message = (
                            f"Jacobian mismatch for output {out_index} with respect to input "
                            f"{index},\nnumerical:{n}\nanalytical:{a}\n(at output element {i}, "
                            f"input element {j})"
                        )
                        if raise_exception:
                            raise GradcheckError(message)
                        return False
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    **_unused,
) -> bool:
    """:func:`gradcheck` applied to the gradient itself: checks second derivatives.

    The first backward is run with ``create_graph=True``; its result, as a
    function of the inputs (and of the output gradients), must match finite
    differences too.
    """
    from glasstorch.autograd import grad as autograd_grad
    from glasstorch.ops.creation import randn
    from glasstorch.tensor import Tensor

    inputs = _as_tuple(inputs)
    outputs = _flat_outputs(func, inputs)
    if grad_outputs is None:
        grad_outputs = tuple(
            randn(tuple(o.shape), dtype=o.dtype, device=o.device).requires_grad_(True)
            for o in outputs
        )
    grad_outputs = _as_tuple(grad_outputs)
    differentiable = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    count = len(inputs)

    def first_derivative(*args):
        ins, outs_grads = args[:count], args[count:]
        outs = _flat_outputs(func, ins)
        grads = autograd_grad(
            outs, [ins[i] for i in differentiable], outs_grads, create_graph=True, allow_unused=True
        )
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivative,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
    )
