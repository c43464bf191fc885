"""Data-parallel training written for ``torchrun``, as PyTorch's DDP tutorial writes it.

Run with ``torchrun --nproc-per-node 2 loader.py ddp_training torch`` under
PyTorch, and with ``python -m glasstorch.distributed.run --nproc-per-node 2
loader.py ddp_training glasstorch`` (``GLASSTORCH_RNG=pytorch``, so the data,
the initial weights and the sampler's shuffle are PyTorch's) under glasstorch.
Each rank seeds its model differently on purpose: DistributedDataParallel's
broadcast from rank 0 must make them equal. Rank 0 writes the loss history
(the mean over the ranks, each step) and the final weights as JSON to the file
named by ``DDP_TRAINING_OUTPUT``.
"""

import json
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

SAMPLES = 90  # not a multiple of 2 * BATCH: the sampler pads, the loader ends short
BATCH = 8
EPOCHS = 3


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(10, 32)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        return self.out(F.relu(self.hidden(x)))


def make_dataset():
    torch.manual_seed(0)
    inputs = torch.randn(SAMPLES, 10)
    labels = (inputs[:, :4] * torch.arange(1.0, 5.0)).argmax(dim=1)
    return TensorDataset(inputs, labels)


def main():
    dist.init_process_group()
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    dataset = make_dataset()

    torch.manual_seed(1 + rank)  # different on every rank: DDP broadcasts rank 0's
    model = DDP(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sampler = DistributedSampler(dataset, shuffle=True, seed=7)
    loader = DataLoader(dataset, batch_size=BATCH, sampler=sampler)

    losses = []
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch)
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss)  # the sum over the ranks
            losses.append(mean_loss.item() / world_size)

    if rank == 0 and os.environ.get("DDP_TRAINING_OUTPUT"):
        state = {name: value.tolist() for name, value in model.module.state_dict().items()}
        with open(os.environ["DDP_TRAINING_OUTPUT"], "w") as file:
            json.dump({"losses": losses, "weights": state}, file)
    dist.destroy_process_group()
