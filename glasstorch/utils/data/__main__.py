"""Measure the DataLoader's throughput: ``python -m glasstorch.utils.data``.

One epoch over a TensorDataset of random float32 features and int64 labels,
for each requested worker count, reporting batches/s and samples/s. The
default workload is 10,000 samples of 784 features in batches of 128 (an
MNIST-sized epoch). The first batch's wait includes starting the workers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import glasstorch
from glasstorch.utils.data import DataLoader, TensorDataset


def measure(dataset, batch_size: int, num_workers: int, shuffle: bool) -> tuple[int, int, float]:
    """Iterate one epoch; returns (batches, samples, seconds)."""
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        num_workers=num_workers,
        generator=glasstorch.Generator().manual_seed(0),
    )
    batches = samples = 0
    start = time.perf_counter()
    for features, _labels in loader:
        batches += 1
        samples += features.shape[0]
    return batches, samples, time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--features", type=int, default=784)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--no-shuffle", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="epochs per worker count")
    args = parser.parse_args(argv)

    # The data is made by NumPy: building it is not what is measured.
    rng = np.random.default_rng(0)
    dataset = TensorDataset(
        glasstorch.from_numpy(rng.standard_normal((args.samples, args.features), np.float32)),
        glasstorch.from_numpy(rng.integers(0, 10, args.samples)),
    )
    print(
        f"tier={glasstorch.tier}  dataset={args.samples}x{args.features} float32  "
        f"batch_size={args.batch_size}  shuffle={not args.no_shuffle}"
    )
    for workers in args.workers:
        for _ in range(args.repeat):
            batches, samples, seconds = measure(
                dataset, args.batch_size, workers, shuffle=not args.no_shuffle
            )
            print(
                f"num_workers={workers}: {batches} batches in {seconds:.2f} s = "
                f"{batches / seconds:.1f} batches/s, {samples / seconds:.0f} samples/s"
            )


if __name__ == "__main__":
    main()
