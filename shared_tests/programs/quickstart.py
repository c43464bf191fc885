"""PyTorch's "Quickstart" tutorial, with random FashionMNIST-sized data in place of the dataset."""

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

IMAGE = 28  # FashionMNIST images are 28x28
SAMPLES = 64
HIDDEN = 512
BATCH_SIZE = 16

classes = [
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
]  # fmt: skip


def make_data(seed=0):
    """Random images and labels, the shapes FashionMNIST would give."""
    rng = np.random.default_rng(seed)
    images = rng.random((SAMPLES, 1, IMAGE, IMAGE), dtype=np.float32)
    labels = rng.integers(0, 10, SAMPLES)
    return TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(IMAGE * IMAGE, HIDDEN),
            nn.ReLU(),
            nn.Linear(HIDDEN, HIDDEN),
            nn.ReLU(),
            nn.Linear(HIDDEN, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train(dataloader, model, loss_fn, optimizer, log):
    size = len(dataloader.dataset)
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        log.append(loss.item())
        if batch % 2 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100 * correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return test_loss, correct


def build():
    return NeuralNetwork().to(device)


def run(model, epochs=2, path=None):
    """Train and test as the tutorial does; returns every loss seen."""
    training_data, test_data = make_data(0), make_data(1)
    train_dataloader = DataLoader(training_data, batch_size=BATCH_SIZE)
    test_dataloader = DataLoader(test_data, batch_size=BATCH_SIZE)
    for X, y in test_dataloader:
        print(f"Shape of X [N, C, H, W]: {X.shape}")
        print(f"Shape of y: {y.shape} {y.dtype}")
        break
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    log = []
    for t in range(epochs):
        print(f"Epoch {t + 1}\n-------------------------------")
        train(train_dataloader, model, loss_fn, optimizer, log)
        log.extend(test(test_dataloader, model, loss_fn))
    if path is not None:
        torch.save(model.state_dict(), path)
        model = NeuralNetwork().to(device)
        model.load_state_dict(torch.load(path, weights_only=True))
    model.eval()
    x, y = test_data[0][0], test_data[0][1]
    with torch.no_grad():
        x = x.to(device)
        pred = model(x)
        predicted, actual = classes[pred[0].argmax(0)], classes[y]
        print(f'Predicted: "{predicted}", Actual: "{actual}"')
    log.append(pred[0].argmax(0).item())
    return log


def main():
    print(f"Using {device} device")
    model = build()
    print(model)
    run(model, path="model.pth")
