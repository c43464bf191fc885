"""The "Saving and Loading Models" recipes: a whole model, a checkpoint, NumPy arrays, safe globals.

* ``torch.save(model, PATH)`` pickles the whole module (its class by reference);
  ``torch.load(PATH, weights_only=False)`` gives it back, trusted.
* Since PyTorch 2.6 ``torch.load`` defaults to ``weights_only=True``, which refuses
  such a file; ``torch.serialization.safe_globals`` lets named classes through.
* A training checkpoint: epoch, model and optimizer state dicts, the loss and a NumPy
  array of metrics, saved together and resumed from.
"""

import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class TheModelClass(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 3, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(3 * 3 * 3, 10)
        self.fc2 = nn.Linear(10, 4)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def build():
    torch.manual_seed(0)
    return TheModelClass()


def train(model, optimizer, x, y, steps):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def whole_model(model, folder, x):
    """Save the whole module, load it back both ways; the outputs before and after."""
    path = os.path.join(folder, "model.pt")
    torch.save(model, path)
    loaded = torch.load(path, weights_only=False)
    loaded.eval()
    try:
        torch.load(path)  # weights_only=True by default: the class is not allow-listed
        refusal = None
    except Exception as error:  # pickle.UnpicklingError, with PyTorch's advice
        refusal = str(error)
    with torch.serialization.safe_globals([TheModelClass, nn.Conv2d, nn.MaxPool2d, nn.Linear]):
        allowed = torch.load(path)
    with torch.no_grad():
        outputs = [model(x), loaded(x), allowed(x)]
    return outputs, type(loaded).__name__, refusal


def checkpoint_and_resume(model, folder, x, y, steps=3):
    """Train, save a checkpoint, train on; resume a fresh model from it and train the same."""
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    log = train(model, optimizer, x, y, steps)
    path = os.path.join(folder, "checkpoint.tar")
    metrics = np.array(log, dtype=np.float64)
    torch.save(
        {
            "epoch": steps,
            "model_state_dict": model.state_dict(),
            "optimizer_state_dict": optimizer.state_dict(),
            "loss": log[-1],
            "metrics": metrics,
        },
        path,
    )
    after = train(model, optimizer, x, y, steps)

    resumed = TheModelClass()
    resumed_optimizer = optim.SGD(resumed.parameters(), lr=0.5)
    checkpoint = torch.load(path, weights_only=False)  # the NumPy array needs it
    resumed.load_state_dict(checkpoint["model_state_dict"])
    resumed_optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    resumed.train()
    again = train(resumed, resumed_optimizer, x, y, steps)
    return log, after, again, checkpoint["epoch"], checkpoint["metrics"]


def save_numpy(folder):
    """A bare NumPy array, saved and loaded back (with weights_only=False)."""
    path = os.path.join(folder, "array.pt")
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    torch.save(array, path)
    return torch.load(path, weights_only=False)


def main():
    import tempfile

    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((8, 1, 8, 8)), dtype=torch.float32)
    y = torch.tensor(rng.integers(0, 4, 8))
    with tempfile.TemporaryDirectory() as folder:
        print(whole_model(build(), folder, x)[1:])
        print(checkpoint_and_resume(build(), folder, x, y))
        print(save_numpy(folder))
