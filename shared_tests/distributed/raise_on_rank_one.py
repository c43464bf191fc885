"""Rank 1 raises while rank 0 waits in a collective: the job must end, not hang."""

import glasstorch as torch
import glasstorch.distributed as dist

dist.init_process_group()
if dist.get_rank() == 1:
    raise ValueError("rank 1 gives up")
dist.all_reduce(torch.ones(3))  # rank 0 would wait here forever
print("rank 0 should never get here")
