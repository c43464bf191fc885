"""L-BFGS: a quasi-Newton method that remembers the last few steps and gradient changes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from glasstorch.autograd.grad_mode import enable_grad, no_grad
from glasstorch.ops.views import cat
from glasstorch.optim.optimizer import Optimizer
from glasstorch.tensor import Tensor


class LBFGS(Optimizer):
    """L-BFGS (Liu and Nocedal, 1989), with fixed steps of length ``lr``.

    Each :meth:`step` runs up to ``max_iter`` iterations, and so needs a
    ``closure`` that recomputes the loss and its gradients. An iteration:

    1. turns the gradient ``g`` into a direction ``d = -H g``, where ``H``
       approximates the inverse Hessian from the last ``history_size`` pairs
       ``s`` (a step taken) and ``y`` (the change in gradient it caused), by
       the two-loop recursion;
    2. moves the parameters by ``t * d``, with ``t = lr`` (on the very first
       iteration ``t = min(1, 1 / sum|g|) * lr``);
    3. evaluates the closure again, and stops when the gradient, the step or
       the change in loss is below its tolerance, or after ``max_eval``
       evaluations.

    All the parameters are handled as one flat vector, so there can be only
    one parameter group.

    Args:
        params: the tensors to optimize (one group).
        lr: the step length (default 1).
        max_iter: iterations per :meth:`step` (default 20).
        max_eval: closure evaluations per step (default ``max_iter * 5 // 4``).
        tolerance_grad: stop when ``max|g|`` is at most this (default 1e-7).
        tolerance_change: stop when a step or the change in loss is below
            this (default 1e-9).
        history_size: how many ``(s, y)`` pairs to remember (default 100).
        line_search_fn: only ``None``; glasstorch has no ``"strong_wolfe"``
            line search (it raises ``NotImplementedError``).

    Example::

        >>> opt = glasstorch.optim.LBFGS([w], lr=1)
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = ((w - 3) ** 2).sum()
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure)
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float | Tensor = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if line_search_fn == "strong_wolfe":
            raise NotImplementedError(
                "LBFGS: line_search_fn='strong_wolfe' is not supported in glasstorch; use "
                "line_search_fn=None (fixed steps of length lr)"
            )
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # ------------------------------------------------------- the flat vector
    def _flat_grad(self) -> Tensor:
        """Every parameter's gradient (zeros where there is none), as one vector."""
        pieces = [
            p.new_zeros((p.numel(),)) if p.grad is None else p.grad.reshape(-1)
            for p in self._params
        ]
        return cat(pieces, 0)

    def _move(self, step: float, direction: Tensor) -> None:
        """``params += step * direction``, the flat direction cut back into parameters."""
        start = 0
        for p in self._params:
            count = p.numel()
            p.add_(direction[start : start + count].reshape(p.shape) * step)
            start += count

    @staticmethod
    def _direction(grad: Tensor, dirs: list, steps: list, ro: list, h_diag) -> Tensor:
        """``-H grad`` by the two-loop recursion over the remembered ``(s, y)`` pairs."""
        q = -grad
        alphas = [None] * len(dirs)
        for i in reversed(range(len(dirs))):
            alphas[i] = steps[i].dot(q) * ro[i]
            q = q - dirs[i] * alphas[i]
        r = q * h_diag
        for i in range(len(dirs)):
            beta = dirs[i].dot(r) * ro[i]
            r = r + steps[i] * (alphas[i] - beta)
        return r

    # ----------------------------------------------------------------- step
    def step(self, closure: Callable[[], Any]):  # type: ignore[override]
        """Run up to ``max_iter`` iterations; return the loss of the first closure call."""
        if closure is None:
            raise RuntimeError("LBFGS requires a closure that reevaluates the model")
        if self.param_groups[0]["line_search_fn"] is not None:
            raise RuntimeError("only 'strong_wolfe' is supported")
        with no_grad():
            return self._iterate(closure)

    def _iterate(self, closure: Callable[[], Any]):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            first_loss = closure()
        loss = float(first_loss)
        evals = 1
        state["func_evals"] += 1
        grad = self._flat_grad()
        if float(grad.abs().max()) <= tolerance_grad:
            return first_loss

        d, t = state.get("d"), state.get("t")
        dirs, steps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag = state.get("H_diag")
        prev_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        iteration = 0
        while iteration < max_iter:
            iteration += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d, dirs, steps, ro, h_diag = -grad, [], [], [], 1
            else:
                y, s = grad - prev_grad, d * t
                ys = y.dot(s)
                if float(ys) > 1e-10:  # keep the pair only if it has positive curvature
                    if len(dirs) == group["history_size"]:
                        dirs.pop(0), steps.pop(0), ro.pop(0)
                    dirs.append(y)
                    steps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                d = self._direction(grad, dirs, steps, ro, h_diag)
            prev_grad, prev_loss = grad.clone(), loss

            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(grad.abs().sum())) * lr
            else:
                t = lr
            if float(grad.dot(d)) > -tolerance_change:  # not a descent direction
                break

            self._move(t, d)
            if iteration != max_iter:
                with enable_grad():
                    loss = float(closure())
                grad = self._flat_grad()
                evals += 1
                state["func_evals"] += 1
            if iteration == max_iter or evals >= max_eval:
                break
            if float(grad.abs().max()) <= tolerance_grad:
                break
            if float((d * t).abs().max()) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(
            d=d, t=t, old_dirs=dirs, old_stps=steps, ro=ro, H_diag=h_diag,
            prev_flat_grad=prev_grad, prev_loss=prev_loss,
        )  # fmt: skip
        return first_loss
