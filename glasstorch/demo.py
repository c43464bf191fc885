"""``python -m glasstorch.demo`` (or ``make demo``): train a digit classifier.

The main job of glasstorch, written exactly as a PyTorch program: the bundled
8x8 handwritten digits (:class:`glasstorch.datasets.Digits`), a
:class:`~glasstorch.utils.data.DataLoader`, a small LeNet-style convolutional
network (two convolutions, ReLU and max pooling, then a linear classifier),
cross-entropy and Adam. ``--model mlp`` trains a two-layer perceptron instead. Each epoch shows a progress bar over its batches, then prints the
mean training loss, the test accuracy and the epoch's time. The trained model
is saved with :func:`glasstorch.save` and loaded back to check it.

It runs on the active tier (``GLASSTORCH_TIER``). The reference tier computes
every multiply-add in a Python loop, so it is much slower, and says so.

Like a PyTorch program, it trains on ``"cuda"`` when ``torch.cuda.is_available()``
(``--device cpu`` forces the CPU) and then prints the caching allocator's
statistics. With ``GLASSTORCH_CUDA=simulator`` that device is the CUDA
simulator, and the demo prints the CPU's losses and accuracy, since every
kernel computes the CPU's numbers.

Pass real PyTorch to compare::

    python -c "import torch; from glasstorch.demo import run; run(torch)"
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from types import ModuleType


def _progress(iterable, description: str, total: int):
    """A tqdm progress bar when tqdm is installed, the plain iterable otherwise."""
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    # disable=None: a bar in a terminal, nothing in a log file (CI) where the bar's
    # redraws would pile up as hundreds of lines.
    return tqdm(iterable, desc=description, total=total, leave=False, unit="batch", disable=None)


def evaluate(torch: ModuleType, model, loader, device="cpu") -> float:
    """Fraction of ``loader``'s samples that ``model`` (on ``device``) classifies correctly."""
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            predictions = model(images).argmax(dim=1)
            correct += int((predictions == labels).sum().item())
            total += labels.shape[0]
    model.train()
    return correct / total


def build_model(torch: ModuleType, model: str = "cnn", hidden: int = 64):
    """The demo's network: ``"cnn"`` (LeNet-style) or ``"mlp"`` (one hidden layer).

    The CNN sees each digit as a 1 x 8 x 8 image: 16 filters of 3 x 3 (padded,
    so 8 x 8 stays 8 x 8), ReLU, 2 x 2 max pooling (to 16 x 4 x 4), and a
    linear layer from those 256 features to the 10 classes: LeNet's
    convolution, nonlinearity, pooling and classifier, with one convolution
    rather than two. It is kept this small so that the reference tier, which
    runs every multiply-add in Python, still trains it in a few minutes.
    """
    nn = torch.nn
    if model == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(64, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 10),
        )
    if model != "cnn":
        raise ValueError(f"model should be 'cnn' or 'mlp', got {model!r}")
    return nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 10),
    )


def run(
    torch: ModuleType,
    epochs: int = 12,
    batch_size: int = 32,
    hidden: int = 64,
    lr: float | None = None,
    num_workers: int = 0,
    seed: int = 0,
    model: str = "cnn",
    device: str | None = None,
) -> float:
    """Train on the digits' training split and return the final test accuracy.

    Args:
        torch: the library to use: ``glasstorch`` or real ``torch``.
        epochs: passes over the 1437 training images.
        batch_size: images per optimizer step.
        hidden: width of the MLP's hidden layer.
        lr: Adam's learning rate; by default 5e-3 for the CNN, 3e-3 for the MLP.
        num_workers: DataLoader worker processes (0 loads in this process).
        seed: seeds the weights and the shuffling, so runs repeat exactly.
        model: ``"cnn"`` (the default) or ``"mlp"``, see :func:`build_model`.
        device: where the model and each batch live: ``"cpu"`` or ``"cuda"``. By
            default ``"cuda"`` when ``torch.cuda.is_available()``, as a PyTorch
            program picks it; then the caching allocator's statistics are printed
            at the end.
    """
    from glasstorch.datasets import Digits

    tier = getattr(torch, "tier", None)
    name = f"glasstorch, {tier} tier" if tier else f"PyTorch {torch.__version__}"
    print(f"glasstorch demo: classify 8x8 handwritten digits ({name})")
    if tier == "reference":
        print(
            "  the reference tier runs every kernel as a Python loop: expect "
            + ("about a minute.\n" if model == "mlp" else "several minutes.\n")
            + "  GLASSTORCH_TIER=fast runs the same program on the C kernels."
        )

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    on_cuda = str(device).startswith("cuda")
    if on_cuda:
        print(f"  device: {device} ({torch.cuda.get_device_name()})")
    if lr is None:
        lr = 5e-3 if model == "cnn" else 3e-3
    torch.manual_seed(seed)
    train_set, test_set = Digits(train=True), Digits(train=False)
    if tier is None:  # real PyTorch: hand it the same images as its own tensors
        train_set = _as_torch_dataset(torch, train_set)
        test_set = _as_torch_dataset(torch, test_set)
    DataLoader = torch.utils.data.DataLoader  # noqa: N806 - a class, as in PyTorch
    generator = torch.Generator().manual_seed(seed)
    train_loader = DataLoader(
        train_set,
        batch_size=batch_size,
        shuffle=True,
        generator=generator,
        num_workers=num_workers,
    )
    test_loader = DataLoader(test_set, batch_size=256)
    print(f"  data: {len(train_set)} training and {len(test_set)} test images, 10 classes")

    nn = torch.nn
    kind = model
    model = build_model(torch, kind, hidden).to(device)
    print("  model:", str(model).replace("\n", "\n  "))
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    accuracy = 0.0
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        epoch_start = time.perf_counter()
        total_loss, batches = 0.0, 0
        bar = _progress(train_loader, f"epoch {epoch:2d}/{epochs}", len(train_loader))
        for images, labels in bar:
            images, labels = images.to(device), labels.to(device)
            loss = loss_fn(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
            batches += 1
        accuracy = evaluate(torch, model, test_loader, device)
        seconds = time.perf_counter() - epoch_start
        print(
            f"epoch {epoch:2d}/{epochs}   loss {total_loss / batches:.4f}   "
            f"test accuracy {accuracy:6.2%}   {seconds:6.2f} s"
        )
    print(f"trained in {time.perf_counter() - start:.1f} s; test accuracy {accuracy:.2%}")

    if tier is not None:
        copy = build_model(torch, kind, hidden).to(device)
        _check_save_and_load(torch, model, copy, test_loader, accuracy, device)
    if on_cuda:
        _print_memory_statistics(torch)
    return accuracy


def _print_memory_statistics(torch: ModuleType) -> None:
    """The caching allocator's key figures after training (docs/guide/gpu.md).

    Training repeats the same sizes batch after batch, so after the first
    batch the allocator serves every tensor from its cache: ``num_device_alloc``
    (the device mallocs) stays a small number however long the run.
    """
    torch.cuda.synchronize()
    stats = torch.cuda.memory_stats()
    mib = 1024 * 1024
    print("CUDA caching allocator:")
    print(
        f"  memory_allocated {torch.cuda.memory_allocated() / mib:.2f} MiB"
        f" (peak {torch.cuda.max_memory_allocated() / mib:.2f} MiB),"
        f" memory_reserved {torch.cuda.memory_reserved() / mib:.2f} MiB"
        f" (peak {torch.cuda.max_memory_reserved() / mib:.2f} MiB)"
    )
    print(
        f"  allocations served {stats.get('allocation.all.allocated', 0)},"
        f" device mallocs (num_device_alloc) {stats.get('num_device_alloc', 0)},"
        f" device frees {stats.get('num_device_free', 0)},"
        f" segments {stats.get('segment.all.current', 0)},"
        f" retries {stats.get('num_alloc_retries', 0)}, OOMs {stats.get('num_ooms', 0)}"
    )


def _check_save_and_load(
    torch: ModuleType, model, copy, loader, accuracy: float, device="cpu"
) -> None:
    """Save the weights, load them into ``copy`` (a fresh model of the same
    architecture, on ``device``), and check it scores the same."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "digits.gt")
        torch.save(model.state_dict(), path)
        copy.load_state_dict(torch.load(path))
        size = os.path.getsize(path)
    reloaded = evaluate(torch, copy, loader, device)
    status = "same accuracy" if reloaded == accuracy else f"accuracy {reloaded:.2%}!"
    print(f"saved and reloaded the weights ({size} bytes): {status}")


def _as_torch_dataset(torch: ModuleType, dataset):
    """The digits as a real PyTorch TensorDataset (for comparing with PyTorch)."""
    images = torch.from_numpy(dataset.data.numpy().astype("float32") / 16.0).unsqueeze(1)
    labels = torch.from_numpy(dataset.targets.numpy().astype("int64"))
    return torch.utils.data.TensorDataset(images, labels)


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point: ``python -m glasstorch.demo [--model cnn|mlp] [--epochs N] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m glasstorch.demo",
        description="Train a classifier on the bundled 8x8 digits with the active tier.",
    )
    parser.add_argument(
        "--model",
        choices=("cnn", "mlp"),
        default="cnn",
        help="the network: a LeNet-style CNN (default) or a two-layer MLP",
    )
    parser.add_argument("--epochs", type=int, default=12, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=32, help="images per step")
    parser.add_argument("--hidden", type=int, default=64, help="the MLP's hidden layer width")
    parser.add_argument(
        "--lr", type=float, default=None, help="Adam's learning rate (5e-3 CNN, 3e-3 MLP)"
    )
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--seed", type=int, default=0, help="seed for weights and shuffling")
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where to train: cuda when torch.cuda.is_available() (auto, the default), or forced",
    )
    args = parser.parse_args(argv)

    import glasstorch

    run(
        glasstorch,
        epochs=args.epochs,
        batch_size=args.batch_size,
        hidden=args.hidden,
        lr=args.lr,
        num_workers=args.workers,
        seed=args.seed,
        model=args.model,
        device=None if args.device == "auto" else args.device,
    )


if __name__ == "__main__":
    main()
