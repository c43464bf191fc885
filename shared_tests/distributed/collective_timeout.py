"""Rank 1 never joins rank 0's all_reduce: the watchdog must end the job after the timeout."""

import datetime
import time

import glasstorch as torch
import glasstorch.distributed as dist


def rank_one_is_busy():
    time.sleep(600)  # stands for a rank stuck in a loop


dist.init_process_group(timeout=datetime.timedelta(seconds=2))
if dist.get_rank() == 0:
    dist.all_reduce(torch.ones(3))
else:
    rank_one_is_busy()
