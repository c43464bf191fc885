"""Time-sequence prediction in pytorch/examples' shape: two LSTMCells learn sine waves, trained by L-BFGS.

Each row of the data is a sine wave with a random phase (made with NumPy). The
network reads a wave one step at a time through two stacked ``nn.LSTMCell`` and a
linear read-out, predicting the next value; after the input ends it feeds its own
predictions back to continue the wave ``future`` steps. Everything is float64, and
the optimizer is ``optim.LBFGS`` driven by a closure.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

T = 20  # steps per wave
L = 100  # the phase range
N = 6  # waves
HIDDEN = 12
FUTURE = 5


def make_data(seed=2):
    rng = np.random.RandomState(seed)
    x = np.empty((N, T), np.int64)
    x[:] = np.arange(T) + rng.randint(-4 * 20, 4 * 20, N).reshape(N, 1)
    return np.sin(x / 1.0 / 20 * 4).astype("float64")  # a period of about 31 steps


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, HIDDEN)
        self.lstm2 = nn.LSTMCell(HIDDEN, HIDDEN)
        self.linear = nn.Linear(HIDDEN, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), HIDDEN, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):  # predict the future from its own outputs
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def build():
    torch.manual_seed(0)
    return Sequence().double()


def run(seq, data, steps=2, lr=0.8):
    """Train on all waves but the first few, test on those; the losses and the last prediction."""
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=lr, max_iter=4)
    log = []
    for i in range(steps):
        print("STEP: ", i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print("loss:", loss.item())
            log.append(loss.item())
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            pred = seq(test_input, future=FUTURE)
            loss = criterion(pred[:, :-FUTURE], test_target)
            print("test loss:", loss.item())
            log.append(loss.item())
            y = pred.detach().numpy()
    return log, y


def main():
    seq = build()
    run(seq, make_data())
