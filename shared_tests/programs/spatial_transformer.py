"""A spatial transformer network in the PyTorch tutorial's shape, on shifted digits.

A small localisation network looks at each image and regresses a 2x3 affine matrix
``theta``, initialised to the identity; ``F.affine_grid`` turns ``theta`` into a grid
of sampling points and ``F.grid_sample`` resamples the image there, so the classifier
behind it sees the digit straightened out. The data are 8x8 digits pasted at random
places on a larger canvas (built with NumPy, so both libraries see the same images).
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

CANVAS = 14  # the side of the shifted images
BATCH = 8
LOG_INTERVAL = 2

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_loaders(images, labels, seed=0):
    """Paste each 8x8 digit (values 0..16) at a random place on a CANVAS x CANVAS canvas."""
    rng = np.random.default_rng(seed)
    canvas = np.zeros((len(images), 1, CANVAS, CANVAS), np.float32)
    for i, image in enumerate(images):
        top, left = rng.integers(0, CANVAS - 8 + 1, size=2)
        canvas[i, 0, top : top + 8, left : left + 8] = image / 16.0
    canvas = (canvas - 0.1307) / 0.3081  # the tutorial's MNIST normalisation
    x, y = torch.from_numpy(canvas), torch.from_numpy(np.asarray(labels, np.int64))
    half = len(x) // 2
    train_loader = DataLoader(TensorDataset(x[:half], y[:half]), batch_size=BATCH, shuffle=False)
    test_loader = DataLoader(TensorDataset(x[half:], y[half:]), batch_size=BATCH)
    return train_loader, test_loader


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        # The classifier.
        self.conv1 = nn.Conv2d(1, 6, kernel_size=3)
        self.conv2 = nn.Conv2d(6, 12, kernel_size=3)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(12 * 2 * 2, 24)
        self.fc2 = nn.Linear(24, 10)

        # The localisation network: where to look.
        self.localization = nn.Sequential(
            nn.Conv2d(1, 4, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(4, 6, kernel_size=3),
            nn.ReLU(True),
        )
        # Regresses the 2x3 affine matrix, starting from the identity transformation.
        self.fc_loc = nn.Sequential(nn.Linear(6 * 3 * 3, 16), nn.ReLU(True), nn.Linear(16, 3 * 2))
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 6 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    def forward(self, x):
        x = self.stn(x)
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 12 * 2 * 2)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def train(model, optimizer, train_loader, epoch, log):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        log.append(loss.item())
        if batch_idx % LOG_INTERVAL == 0:
            print(
                f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)} "
                f"({100.0 * batch_idx / len(train_loader):.0f}%)]\tLoss: {loss.item():.6f}"
            )


def test(model, test_loader):
    with torch.no_grad():
        model.eval()
        test_loss = 0
        correct = 0
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
        print(
            f"\nTest set: Average loss: {test_loss:.4f}, Accuracy: {correct}/"
            f"{len(test_loader.dataset)} ({100.0 * correct / len(test_loader.dataset):.0f}%)\n"
        )
        return test_loss, correct


def visualize_stn(model, test_loader):
    """The tutorial's last step: the input batch and what the transformer made of it."""
    with torch.no_grad():
        data = next(iter(test_loader))[0].to(device)
        transformed = model.stn(data).cpu()
        return data.cpu(), transformed


def warp(images, angle, scale, mode, padding_mode, align_corners):
    """Rotate and zoom a batch by hand, as one does to build an augmented data set."""
    c, s = np.cos(angle) * scale, np.sin(angle) * scale
    theta = torch.tensor([[c, -s, 0.1], [s, c, -0.2]], dtype=torch.float32, device=images.device)
    theta = theta.unsqueeze(0).expand(images.size(0), 2, 3)
    grid = F.affine_grid(theta, list(images.shape), align_corners=align_corners)
    return F.grid_sample(
        images, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners
    )


def build():
    torch.manual_seed(0)
    return Net().to(device)


def run(model, train_loader, test_loader, epochs=2):
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    log = []
    for epoch in range(1, epochs + 1):
        train(model, optimizer, train_loader, epoch, log)
        log.extend(test(model, test_loader))
    return log


def main():
    rng = np.random.default_rng(0)
    images, labels = rng.integers(0, 17, (64, 8, 8)), rng.integers(0, 10, 64)
    train_loader, test_loader = make_loaders(images, labels)
    model = build()
    run(model, train_loader, test_loader)
    visualize_stn(model, test_loader)
