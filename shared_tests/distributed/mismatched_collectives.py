"""Ranks that disagree on a collective; run with TORCH_DISTRIBUTED_DEBUG=DETAIL.

Usage: mismatched_collectives.py shape|op|missing
"""

import sys

import glasstorch as torch
import glasstorch.distributed as dist

dist.init_process_group()
rank = dist.get_rank()
dist.all_reduce(torch.ones(2))  # agreed: runs
kind = sys.argv[1]
if kind == "shape":
    dist.all_reduce(torch.ones(4 if rank == 0 else 3))
elif kind == "op":
    if rank == 0:
        dist.all_reduce(torch.ones(3))
    else:
        dist.broadcast(torch.ones(3), src=0)
elif kind == "missing" and rank == 0:
    dist.all_reduce(torch.ones(3))  # rank 1 skips it and ends
dist.destroy_process_group()
print("no mismatch was detected")
