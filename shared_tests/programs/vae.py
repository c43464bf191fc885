"""A variational autoencoder in pytorch/examples' shape, on 8x8 digits.

The encoder maps an image to the mean and log-variance of a Gaussian over a small
latent space; training samples from it with the reparameterisation trick
(``mu + eps * std`` with ``eps = torch.randn_like(std)``) so gradients reach both
heads, and the loss is the binary cross-entropy of the reconstruction plus the KL
divergence from the unit Gaussian. In evaluation the mean is used, so a test loss
needs no random numbers. The images come in as a NumPy array of pixel values 0..16.
"""

import numpy as np
import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F

PIXELS = 64
HIDDEN = 32
LATENT = 4
BATCH_SIZE = 16
LOG_INTERVAL = 2

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_loaders(images, shuffle=True):
    """Training and test loaders over images scaled to [0, 1]."""
    x = torch.from_numpy(np.asarray(images, np.float32).reshape(-1, 1, 8, 8) / 16.0)
    half = len(x) // 2
    train = torch.utils.data.TensorDataset(x[:half], torch.zeros(half))
    test = torch.utils.data.TensorDataset(x[half:], torch.zeros(len(x) - half))
    return (
        torch.utils.data.DataLoader(train, batch_size=BATCH_SIZE, shuffle=shuffle),
        torch.utils.data.DataLoader(test, batch_size=BATCH_SIZE, shuffle=False),
    )


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(PIXELS, HIDDEN)
        self.fc21 = nn.Linear(HIDDEN, LATENT)
        self.fc22 = nn.Linear(HIDDEN, LATENT)
        self.fc3 = nn.Linear(LATENT, HIDDEN)
        self.fc4 = nn.Linear(HIDDEN, PIXELS)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        if not self.training:
            return mu
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, PIXELS))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    """Reconstruction (binary cross-entropy, summed) plus KL(q(z|x) || N(0, I))."""
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, PIXELS), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def train(model, optimizer, train_loader, epoch):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        if batch_idx % LOG_INTERVAL == 0:
            print(
                f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)}]"
                f"\tLoss: {loss.item() / len(data):.6f}"
            )
    average = train_loss / len(train_loader.dataset)
    print(f"====> Epoch: {epoch} Average loss: {average:.4f}")
    return average


def test(model, test_loader):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for i, (data, _) in enumerate(test_loader):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            if i == 0:
                n = min(data.size(0), 4)
                comparison = torch.cat([data[:n], recon_batch.view(-1, 1, 8, 8)[:n]])
    test_loss /= len(test_loader.dataset)
    print(f"====> Test set loss: {test_loss:.4f}")
    return test_loss, comparison


def sample(model, count=8):
    """Decode draws from the prior, as the example does after every epoch."""
    with torch.no_grad():
        z = torch.randn(count, LATENT).to(device)
        return model.decode(z).cpu().view(count, 1, 8, 8)


def build():
    torch.manual_seed(1)
    return VAE().to(device)


def run(model, train_loader, test_loader, epochs=2, seed=1):
    """Train for a few epochs; the per-epoch training and test losses, and the last samples."""
    torch.manual_seed(seed)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    log = []
    for epoch in range(1, epochs + 1):
        log.append(train(model, optimizer, train_loader, epoch))
        log.append(test(model, test_loader)[0])
    return log, sample(model)


def main():
    images = np.random.default_rng(0).integers(0, 17, (64, 8, 8))
    model = build()
    run(model, *make_loaders(images))
