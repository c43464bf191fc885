"""A data-parallel training loop written for torch.distributed, gradients averaged by hand.

Run under torchrun with PyTorch (``... data_parallel_by_hand.py torch OUT``) and under
glasstorch's launcher (``... glasstorch OUT``): rank 0 writes the loss history and the
final weights to OUT, and the test compares the two runs. Every number is made from
formulas (no random numbers), so both libraries start from the same weights.
"""

import importlib
import json
import sys

torch = importlib.import_module(sys.argv[1])
dist = importlib.import_module(sys.argv[1] + ".distributed")

dist.init_process_group(backend="gloo")
rank, world = dist.get_rank(), dist.get_world_size()

# Each rank starts from other weights; the broadcast makes them rank 0's.
weight = (torch.arange(12.0).reshape(3, 4) / 10 + rank).requires_grad_()
bias = torch.full((3,), float(rank), requires_grad=True)
with torch.no_grad():
    dist.broadcast(weight, src=0)
    dist.broadcast(bias, src=0)

# The full batch is 16 samples; each rank takes its shard of 16 // world.
inputs = torch.linspace(-1.0, 1.0, 64).reshape(16, 4)
targets = (
    inputs @ torch.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 1.0], [2.0, 0.0, -1.0], [1.0, 1.0, 1.0]])
).sin()
shard = slice(rank * (16 // world), (rank + 1) * (16 // world))

losses = []
for _step in range(8):
    prediction = inputs[shard] @ weight.t() + bias
    loss = ((prediction - targets[shard]) ** 2).mean()
    weight.grad = None
    bias.grad = None
    loss.backward()
    works = [dist.all_reduce(p.grad, async_op=True) for p in (weight, bias)]
    for work in works:
        work.wait()
    with torch.no_grad():
        for p in (weight, bias):
            p -= 0.1 * p.grad / world
    total = loss.detach().clone()
    dist.all_reduce(total)
    losses.append(total.item() / world)

everyone = [None] * world
dist.all_gather_object(everyone, losses[-1])
assert everyone == [losses[-1]] * world
if rank == 0:
    result = {"losses": losses, "weight": weight.tolist(), "bias": bias.tolist()}
    with open(sys.argv[2], "w") as file:
        json.dump(result, file)
dist.destroy_process_group()
