"""Print this rank's torchrun variables and an all-reduce of the ranks (launcher tests)."""

import os

import glasstorch as torch
import glasstorch.distributed as dist

dist.init_process_group()
total = torch.tensor([float(dist.get_rank())])
dist.all_reduce(total)
names = ("RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")
print("rank", *(f"{name}={os.environ.get(name)}" for name in names), f"sum={total.item():g}")
dist.destroy_process_group()
