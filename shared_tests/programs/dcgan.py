"""A DCGAN in the shape of pytorch/examples' and the DCGAN tutorial's, shrunk to 16x16 images.

The generator turns a noise vector into an image through transposed convolutions,
batch norm and ReLU, ending in ``tanh``; the discriminator is a strided
convolutional classifier with LeakyReLU, ending in a sigmoid. Weights start from
``N(0, 0.02)`` (batch norm's from ``N(1, 0.02)``) through ``model.apply``. One training
step updates D on a real batch and on a detached fake batch, then G through D.
"""

import torch
import torch.nn as nn
import torch.optim as optim

nz = 8  # size of the latent vector
ngf = 8  # generator feature maps
ndf = 8  # discriminator feature maps
nc = 1  # image channels
real_label = 1.0
fake_label = 0.0

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            # nz x 1 x 1 -> (ngf*2) x 4 x 4
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # -> ngf x 8 x 8
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            # -> nc x 16 x 16
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            # nc x 16 x 16 -> ndf x 8 x 8
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # -> (ndf*2) x 4 x 4
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # -> 1 x 1 x 1
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def build():
    torch.manual_seed(999)
    netG = Generator().to(device)
    netG.apply(weights_init)
    netD = Discriminator().to(device)
    netD.apply(weights_init)
    return netG, netD


def optimizers(netG, netD, lr=0.0002, beta1=0.5):
    optimizerD = optim.Adam(netD.parameters(), lr=lr, betas=(beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=lr, betas=(beta1, 0.999))
    return optimizerD, optimizerG


def train_step(netG, netD, optimizerD, optimizerG, real_cpu, noise, criterion):
    """One iteration of the training loop: D's loss, D(x), D(G(z)) before and after G's step."""
    # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
    netD.zero_grad()
    real = real_cpu.to(device)
    batch_size = real.size(0)
    label = torch.full((batch_size,), real_label, dtype=real.dtype, device=device)
    output = netD(real)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()

    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()

    # (2) Update G: maximize log(D(G(z)))
    netG.zero_grad()
    label.fill_(real_label)  # fake labels are real for the generator cost
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    print(
        f"Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}"
    )
    return [errD.item(), errG.item(), D_x, D_G_z1, D_G_z2]


def train(netG, netD, batches, noises):
    """The loop over a list of real batches, each with its noise; then G on fixed noise in eval."""
    criterion = nn.BCELoss()
    optimizerD, optimizerG = optimizers(netG, netD)
    log = []
    for real_cpu, noise in zip(batches, noises):
        log.extend(train_step(netG, netD, optimizerD, optimizerG, real_cpu, noise, criterion))
    netG.eval()
    with torch.no_grad():
        fixed = netG(noises[0]).detach().cpu()
    netG.train()
    return log, fixed


def main():
    netG, netD = build()
    batches = [torch.rand(4, nc, 16, 16) * 2 - 1 for _ in range(2)]
    noises = [torch.randn(4, nz, 1, 1, device=device) for _ in range(2)]
    train(netG, netD, batches, noises)
