"""``python -m glasstorch.polynomial``: fit a cubic to sin(x) with autograd alone.

The program is written exactly as it would be for PyTorch. It runs on the
active tier (``GLASSTORCH_TIER``), prints the loss as it falls, and ends with
the polynomial it found and how long it took. Pass real PyTorch instead to
compare the numbers::

    python -c "import torch; from glasstorch.polynomial import run; run(torch)"

Four scalar parameters ``a, b, c, d`` start random, and gradient descent moves
them to make ``a + b*x + c*x**2 + d*x**3`` close to ``sin(x)`` on
``[-pi, pi]``. One trick keeps plain gradient descent fast: the polynomial is
fitted in ``t = x / pi``, which lies in ``[-1, 1]``. In ``x`` itself, ``x**3``
reaches 31 while ``1`` stays 1, so a step size small enough for ``d`` barely
moves ``a``; in ``t`` all four powers have similar sizes and one step size
suits them all. The coefficients are converted back to ``x`` at the end.
"""

from __future__ import annotations

import argparse
import math
import time
from types import ModuleType


def run(torch: ModuleType, steps: int = 400, lr: float = 0.8, points: int = 1000) -> list[float]:
    """Fit ``sin(x)`` on ``[-pi, pi]`` with a cubic; print progress; return the coefficients.

    Args:
        torch: the tensor library to use: ``glasstorch`` or real ``torch``.
        steps: gradient descent steps.
        lr: learning rate (step size).
        points: how many evenly spaced samples of ``sin(x)`` to fit.

    Returns:
        ``[a, b, c, d]`` such that ``sin(x) ~ a + b*x + c*x**2 + d*x**3``.
    """
    tier = getattr(torch, "tier", None) or f"PyTorch {torch.__version__}"
    print(f"glasstorch demo: fit a cubic to sin(x) on [-pi, pi]  (tier: {tier})")
    start = time.perf_counter()

    x = torch.linspace(-math.pi, math.pi, points)
    y = torch.sin(x)
    t = x / math.pi  # in [-1, 1]: the powers of t have similar sizes
    t2 = t * t
    t3 = t2 * t

    torch.manual_seed(0)
    a = torch.randn((), requires_grad=True)
    b = torch.randn((), requires_grad=True)
    c = torch.randn((), requires_grad=True)
    d = torch.randn((), requires_grad=True)
    params = [a, b, c, d]

    report_every = max(1, steps // 10)
    for step in range(1, steps + 1):
        y_pred = a + b * t + c * t2 + d * t3  # forward: builds the graph
        loss = (y_pred - y).pow(2).mean()
        loss.backward()  # fills a.grad, b.grad, c.grad, d.grad

        with torch.no_grad():  # the update itself must not be recorded
            for p in params:
                p -= lr * p.grad
                p.grad = None  # gradients accumulate, so clear them for the next step

        if step == 1 or step % report_every == 0 or step == steps:
            print(f"  step {step:5d}   loss {loss.item():.6f}")

    # Back from t = x / pi to x: the t**k coefficient divides by pi**k.
    coeffs = [p.item() / math.pi**k for k, p in enumerate(params)]
    elapsed = time.perf_counter() - start
    a0, b1, c2, d3 = coeffs
    print(f"result: sin(x) ~ {a0:+.5f} {b1:+.5f} x {c2:+.5f} x^2 {d3:+.5f} x^3")
    print(f"{steps} steps on {points} points in {elapsed:.2f} s")
    return coeffs


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point: ``python -m glasstorch.polynomial [--steps N] [--lr LR]``."""
    parser = argparse.ArgumentParser(
        prog="python -m glasstorch.polynomial",
        description="Fit a cubic to sin(x) with autograd on the active tier.",
    )
    parser.add_argument("--steps", type=int, default=400, help="gradient descent steps")
    parser.add_argument("--lr", type=float, default=0.8, help="learning rate")
    parser.add_argument("--points", type=int, default=1000, help="samples of sin(x)")
    args = parser.parse_args(argv)

    import glasstorch

    run(glasstorch, steps=args.steps, lr=args.lr, points=args.points)


if __name__ == "__main__":
    main()
