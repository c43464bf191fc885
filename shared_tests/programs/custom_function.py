"""Custom autograd Functions, as the "Learning PyTorch with Examples" and NumPy-extension tutorials write them.

* ``LegendrePolynomial3``: ``P3(x) = (5x^3 - 3x) / 2`` with a hand-written backward,
  used to fit ``sin`` with ``y = a + b * P3(c + d * x)`` by plain gradient descent.
* ``NumpySoftClip``: a forward and backward computed in NumPy (what an extension
  around a NumPy or SciPy routine does), marked ``@once_differentiable`` because
  autograd cannot look inside NumPy: a second derivative must be refused.
* ``ClampStraightThrough``: ``clamp`` forward, identity backward (the straight-through
  estimator), with ``ctx.mark_non_differentiable`` on its mask output.
"""

import math

import numpy as np
import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable

dtype = torch.float
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
POINTS = 200
STEPS = 400


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


def fit_sine(a, b, c, d, learning_rate=5e-6):
    """The tutorial's loop: the losses every 100 steps and the fitted coefficients."""
    x = torch.linspace(-math.pi, math.pi, POINTS, device=device, dtype=dtype)
    y = torch.sin(x)
    a, b, c, d = (
        torch.full((), v, device=device, dtype=dtype, requires_grad=True) for v in (a, b, c, d)
    )
    log = []
    for t in range(STEPS):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        if t % 100 == 99:
            print(t, loss.item())
            log.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= learning_rate * p.grad
                p.grad = None
    print(f"Result: y = {a.item()} + {b.item()} * P3({c.item()} + {d.item()} x)")
    return log + [a.item(), b.item(), c.item(), d.item()]


class NumpySoftClip(Function):
    """``limit * tanh(x / limit)``, computed in NumPy."""

    @staticmethod
    def forward(ctx, input, limit):
        result = limit * np.tanh(input.detach().cpu().numpy() / limit)
        ctx.limit = limit
        output = torch.as_tensor(result, dtype=input.dtype, device=input.device)
        ctx.save_for_backward(output)
        return output

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (output,) = ctx.saved_tensors
        slope = 1.0 - (output.cpu().numpy() / ctx.limit) ** 2
        grad = grad_output.cpu().numpy() * slope
        return torch.as_tensor(grad, device=grad_output.device), None


class ClampStraightThrough(Function):
    @staticmethod
    def forward(ctx, input, low, high):
        mask = (input < low) | (input > high)
        ctx.mark_non_differentiable(mask)
        return input.clamp(low, high), mask

    @staticmethod
    def backward(ctx, grad_output, grad_mask):
        return grad_output, None, None


class SoftClipNet(torch.nn.Module):
    def __init__(self, features=6, limit=2.0):
        super().__init__()
        self.linear = torch.nn.Linear(features, features)
        self.out = torch.nn.Linear(features, 1)
        self.limit = limit

    def forward(self, x):
        h = NumpySoftClip.apply(self.linear(x), self.limit)
        h, clipped = ClampStraightThrough.apply(h, -1.5, 1.5)
        return self.out(h), clipped


def train_soft_clip(model, x, y, steps=5):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    log = []
    for _ in range(steps):
        optimizer.zero_grad()
        prediction, clipped = model(x)
        loss = torch.nn.functional.mse_loss(prediction, y)
        loss.backward()
        optimizer.step()
        log.extend([loss.item(), clipped.sum().item()])
    return log


def second_derivative_of_soft_clip(x):
    """Differentiating ``NumpySoftClip`` twice must fail with autograd's message."""
    x = x.clone().requires_grad_()
    y = NumpySoftClip.apply(x, 2.0).pow(2).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    try:
        g.sum().backward()
    except RuntimeError as error:
        return g, str(error)
    return g, None


def main():
    fit_sine(-0.1, -0.9, 0.0, 0.3)
    torch.manual_seed(0)
    model = SoftClipNet().to(device)
    x = torch.randn(16, 6, device=device) * 3
    train_soft_clip(model, x, x.sum(1, keepdim=True))
    print(second_derivative_of_soft_clip(x)[1])
