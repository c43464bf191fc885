"""What each rank runs for ``test_distributed_ddp.py``: ``DistributedDataParallel`` on 2 ranks.

Started by the launcher (``python -m glasstorch.distributed.run --nproc-per-node 2
distributed/ddp_checks.py OUT [cuda]``), every rank runs every check below, one after another (a
launch costs about a second), and writes what it saw to ``OUT/rank<r>.json``:
gradients, weights and messages as plain lists and strings. The tests read
those files and assert the values. Each check also computes, in the same
process, what one process training on the whole batch gets, so the comparison
needs no second run.
"""

from __future__ import annotations

import json
import os
import sys

import glasstorch as torch
import glasstorch.distributed as dist
from glasstorch import nn
from glasstorch.nn.parallel import DistributedDataParallel
from glasstorch.utils.data import DataLoader, DistributedSampler, TensorDataset

BATCH = 8  # the whole batch; each of the 2 ranks gets half
DEVICE = "cpu"  # "cuda" (the simulator's tensors go through host memory) from the command line


def net() -> nn.Module:
    model = nn.Sequential(
        nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)
    )
    return model.to(DEVICE)


def the_data(seed: int = 100):
    generator = torch.Generator().manual_seed(seed)
    x, y = torch.randn(BATCH, 5, generator=generator), torch.randn(BATCH, 3, generator=generator)
    return x.to(DEVICE), y.to(DEVICE)


def my_half(tensor, rank: int, world: int):
    size = tensor.shape[0] // world
    return tensor[rank * size : (rank + 1) * size]


def loss_of(model, x, y):
    return ((model(x) - y) ** 2).mean()


def grads(model) -> list:
    return [None if p.grad is None else p.grad.tolist() for p in model.parameters()]


def weights(model) -> list:
    return [p.detach().tolist() for p in model.parameters()]


def copy_of(model) -> nn.Module:
    twin = net()
    twin.load_state_dict(model.state_dict())
    return twin


def check_construction_and_training(rank: int, world: int) -> dict:
    """Rank 0's weights reach everyone; 3 SGD steps equal full-batch training in one process."""
    torch.manual_seed(rank)  # every rank starts different: the broadcast must fix that
    model = net()
    before = weights(model)
    result = {"initial": before, "state_dict_keys": []}
    for bucket_cap_mb, as_view in [(None, False), (0.0005, False), (0.0005, True)]:
        torch.manual_seed(rank)
        model = net()
        ddp = DistributedDataParallel(
            model, bucket_cap_mb=bucket_cap_mb, gradient_as_bucket_view=as_view
        )
        single = copy_of(model)  # after the broadcast: rank 0's weights
        result.setdefault("after_broadcast", weights(model))
        result["state_dict_keys"] = list(ddp.state_dict())
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
        single_optimizer = torch.optim.SGD(single.parameters(), lr=0.1, momentum=0.9)
        x, y = the_data()
        history = []
        for _ in range(3):
            optimizer.zero_grad()
            loss_of(ddp, my_half(x, rank, world), my_half(y, rank, world)).backward()
            history.append({"ddp": grads(model)})
            optimizer.step()
            single_optimizer.zero_grad()
            loss_of(single, x, y).backward()
            history[-1]["single"] = grads(single)
            single_optimizer.step()
        result[f"buckets {bucket_cap_mb} view {as_view}"] = {
            "bucket_sizes": [len(bucket.params) for bucket in ddp.reducer.buckets],
            "history": history,
            "ddp_weights": weights(model),
            "single_weights": weights(single),
        }
    return result


def check_no_sync(rank: int, world: int) -> dict:
    """Two micro-batches, the first under no_sync: one reduction of the accumulated sum."""
    torch.manual_seed(0)
    model = net()
    ddp = DistributedDataParallel(model)
    single = copy_of(model)
    x, y = the_data()
    x_mine, y_mine = my_half(x, rank, world), my_half(y, rank, world)
    first, second = slice(0, 2), slice(2, 4)  # each rank's two micro-batches
    with ddp.no_sync():
        loss_of(ddp, x_mine[first], y_mine[first]).backward()
    local_after_no_sync = grads(model)
    loss_of(ddp, x_mine[second], y_mine[second]).backward()
    # One process: the sum over every rank's micro-batch losses, averaged over the ranks.
    total = sum(
        loss_of(single, my_half(x, r, world)[part], my_half(y, r, world)[part])
        for r in range(world)
        for part in (first, second)
    )
    (total / world).backward()
    return {"local": local_after_no_sync, "ddp": grads(model), "single": grads(single)}


class Branches(nn.Module):
    """``trunk`` always used; ``sometimes`` only on rank 0; ``never`` by nobody."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(5, 3)
        self.sometimes = nn.Linear(5, 3)
        self.never = nn.Linear(5, 3)

    def forward(self, x, use_sometimes: bool):
        out = self.trunk(x)
        return out + self.sometimes(x) if use_sometimes else out


def check_find_unused_parameters(rank: int, world: int) -> dict:
    torch.manual_seed(0)
    model = Branches()
    ddp = DistributedDataParallel(model, find_unused_parameters=True)
    x, y = the_data()
    results = []
    for _ in range(2):  # twice: the second iteration must not see stale state
        model.zero_grad()
        out = ddp(my_half(x, rank, world), use_sometimes=(rank == 0))
        ((out - my_half(y, rank, world)) ** 2).mean().backward()
        results.append(
            {
                name: None if p.grad is None else p.grad.tolist()
                for name, p in model.named_parameters()
            }
        )
    # What each rank's loss alone gives (no communication): the test averages them.
    twin = Branches()
    twin.load_state_dict(model.state_dict())
    out = twin(my_half(x, rank, world), use_sometimes=(rank == 0))
    ((out - my_half(y, rank, world)) ** 2).mean().backward()
    local = {
        name: None if p.grad is None else p.grad.tolist() for name, p in twin.named_parameters()
    }
    return {"ddp": results, "local": local}


def check_unused_parameter_error(rank: int, world: int) -> dict:
    torch.manual_seed(0)
    model = Branches()
    ddp = DistributedDataParallel(model)  # without find_unused_parameters
    x, _ = the_data()
    ddp(my_half(x, rank, world), use_sometimes=False).sum().backward()  # no error yet
    try:
        ddp(my_half(x, rank, world), use_sometimes=False)
    except RuntimeError as error:
        return {"error": str(error)}
    return {"error": None}


def check_sampler_and_loader(rank: int, world: int) -> dict:
    dataset = TensorDataset(torch.arange(21))
    sampler = DistributedSampler(dataset, seed=3)  # num_replicas and rank from the group
    loader = DataLoader(dataset, batch_size=4, sampler=sampler)
    epochs = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        epochs.append([batch[0].tolist() for batch in loader])
    return {"num_replicas": sampler.num_replicas, "rank": sampler.rank, "epochs": epochs}


def check_buffers_follow_rank_0(rank: int, world: int) -> dict:
    """broadcast_buffers: before each forward every rank takes rank 0's running statistics."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4))
    ddp = DistributedDataParallel(model)
    seen = []
    for step in range(2):
        x = torch.randn(6, 5, generator=torch.Generator().manual_seed(10 * step + rank))
        with torch.no_grad():
            batch_mean = model[0](x).mean(0)  # what this forward adds to the running mean
        ddp(x).sum().backward()
        seen.append(
            {"batch_mean": batch_mean.tolist(), "running_mean": model[1].running_mean.tolist()}
        )
    return {"steps": seen}


CHECKS = {
    "construction_and_training": check_construction_and_training,
    "no_sync": check_no_sync,
    "find_unused_parameters": check_find_unused_parameters,
    "unused_parameter_error": check_unused_parameter_error,
    "sampler_and_loader": check_sampler_and_loader,
    "buffers": check_buffers_follow_rank_0,
}


#: The checks run with the model on a GPU (``ddp_checks.py OUT cuda``).
DEVICE_CHECKS = ("construction_and_training", "no_sync")


def main(out_dir: str, device: str = "cpu") -> None:
    global DEVICE
    DEVICE = device
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {"world_size": world}
    for name, check in CHECKS.items():
        if device != "cpu" and name not in DEVICE_CHECKS:
            continue
        results[name] = check(rank, world)
        dist.barrier()  # the next check starts together (its broadcasts pair up)
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w", encoding="utf-8") as file:
        json.dump(results, file)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
