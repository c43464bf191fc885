"""d2l.ai-style code: data manipulation, linear and softmax regression, MLPs, LeNet, corr2d."""
# ruff: noqa: B007, UP031 - the public programs' own idioms, kept as they are written

import numpy as np
import torch
from torch import nn
from torch.utils import data


def preliminaries():
    """Chapter 2: tensors, broadcasting, in-place assignment, conversion."""
    x = torch.arange(12, dtype=torch.float32)
    X = x.reshape(3, 4)
    Y = torch.tensor([[2.0, 1, 4, 3], [1, 2, 3, 4], [4, 3, 2, 1]])
    out = [x.numel(), X.shape[0], torch.cat((X, Y), dim=0).shape[0], (X == Y).sum().item()]
    a = torch.arange(3).reshape((3, 1))
    b = torch.arange(2).reshape((1, 2))
    out.append((a + b).sum().item())
    X[1, 2] = 17
    X[:2, :] = 12
    before = id(Y)
    Y = Y + X
    out.append(id(Y) == before)
    Z = torch.zeros_like(Y)
    Z[:] = X + Y
    before = id(X)
    X += Y
    out.append(id(X) == before)
    A = X.numpy()
    B = torch.from_numpy(A)
    out.append(type(A).__name__ + "/" + type(B).__name__)
    a = torch.tensor([3.5])
    out.extend([a.item(), float(a), int(a)])
    A = torch.arange(20, dtype=torch.float32).reshape(5, 4)
    sum_A = A.sum(axis=1, keepdims=True)
    out.extend(
        [(A / sum_A).sum().item(), A.cumsum(axis=0)[-1, -1].item(), A.mean(axis=0)[0].item()]
    )
    out.append(torch.norm(torch.ones((4, 9))).item())
    u = torch.tensor([3.0, -4.0])
    out.extend([torch.norm(u).item(), torch.abs(u).sum().item()])
    x = torch.arange(4.0)
    x.requires_grad_(True)
    y = 2 * torch.dot(x, x)
    y.backward()
    out.extend((x.grad == 4 * x).tolist())
    x.grad.zero_()
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    out.append(bool((x.grad == u).all()))
    return out


def synthetic_data(w, b, num_examples):
    """Generate y = Xw + b + noise."""
    X = torch.normal(0, 1, (num_examples, len(w)))
    y = torch.matmul(X, w) + b
    y += torch.normal(0, 0.01, y.shape)
    return X, y.reshape((-1, 1))


def load_array(data_arrays, batch_size, is_train=True):
    """Construct a PyTorch data iterator."""
    dataset = data.TensorDataset(*data_arrays)
    return data.DataLoader(dataset, batch_size, shuffle=is_train)


def linear_regression_concise(features, labels, net):
    data_iter = load_array((features, labels), 10, is_train=False)
    loss = nn.MSELoss()
    trainer = torch.optim.SGD(net.parameters(), lr=0.03)
    log = []
    for epoch in range(3):
        for X, y in data_iter:
            l = loss(net(X), y)  # noqa: E741 - d2l's name
            trainer.zero_grad()
            l.backward()
            trainer.step()
        l = loss(net(features), labels)  # noqa: E741
        print(f"epoch {epoch + 1}, loss {l:f}")
        log.append(l.item())
    return log


def linreg(X, w, b):
    return torch.matmul(X, w) + b


def squared_loss(y_hat, y):
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def sgd(params, lr, batch_size):
    """Minibatch stochastic gradient descent."""
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


def linear_regression_scratch(features, labels, w):
    w = w.clone().requires_grad_(True)
    b = torch.zeros(1, requires_grad=True)
    batch_size = 10
    log = []
    for epoch in range(3):
        for i in range(0, len(features), batch_size):
            X, y = features[i : i + batch_size], labels[i : i + batch_size]
            l = squared_loss(linreg(X, w, b), y)  # noqa: E741
            l.sum().backward()
            sgd([w, b], 0.03, batch_size)
        with torch.no_grad():
            train_l = squared_loss(linreg(features, w, b), labels)
            print(f"epoch {epoch + 1}, loss {float(train_l.mean()):f}")
            log.append(float(train_l.mean()))
    return log


def softmax(X):
    X_exp = torch.exp(X)
    partition = X_exp.sum(1, keepdim=True)
    return X_exp / partition


def cross_entropy(y_hat, y):
    return -torch.log(y_hat[range(len(y_hat)), y])


def accuracy(y_hat, y):
    """Compute the number of correct predictions."""
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


class Accumulator:
    """For accumulating sums over n variables."""

    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        self.data = [a + float(b) for a, b in zip(self.data, args)]

    def __getitem__(self, idx):
        return self.data[idx]


def softmax_regression_scratch(images, labels, W):
    W = W.clone().requires_grad_(True)
    b = torch.zeros(10, requires_grad=True)

    def net(X):
        return softmax(torch.matmul(X.reshape((-1, W.shape[0])), W) + b)

    log = []
    train_iter = load_array((images, labels), 16, is_train=False)
    for epoch in range(2):
        metric = Accumulator(3)
        for X, y in train_iter:
            y_hat = net(X)
            l = cross_entropy(y_hat, y)  # noqa: E741
            l.sum().backward()
            sgd([W, b], 0.1, X.shape[0])
            metric.add(float(l.sum()), accuracy(y_hat, y), y.numel())
        log.extend([metric[0] / metric[2], metric[1] / metric[2]])
    return log


def relu(X):
    a = torch.zeros_like(X)
    return torch.max(X, a)


def dropout_layer(X, dropout):
    assert 0 <= dropout <= 1
    if dropout == 1:
        return torch.zeros_like(X)
    mask = (torch.rand(X.shape) > dropout).float()
    return mask * X / (1.0 - dropout)


def init_weights(m):
    if type(m) == nn.Linear:  # noqa: E721 - d2l's test
        nn.init.normal_(m.weight, std=0.01)
        nn.init.zeros_(m.bias)


def xavier(m):
    if type(m) == nn.Linear:  # noqa: E721
        nn.init.xavier_uniform_(m.weight)


def corr2d(X, K):
    """Compute 2D cross-correlation."""
    h, w = K.shape
    Y = torch.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = (X[i : i + h, j : j + w] * K).sum()
    return Y


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Conv2d(6, 16, kernel_size=5), nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.Sigmoid(),
        nn.Linear(120, 84), nn.Sigmoid(),
        nn.Linear(84, 10),
    )  # fmt: skip


def shapes():
    """d2l's layer-by-layer shape printout, a dropout MLP and the corr2d edge detector."""
    X = torch.rand(size=(1, 1, 28, 28), dtype=torch.float32)
    out = []
    for layer in lenet():
        X = layer(X)
        print(layer.__class__.__name__, "output shape: \t", X.shape)
        out.append(tuple(X.shape))
    X = torch.ones((6, 8))
    X[:, 2:6] = 0
    K = torch.tensor([[1.0, -1.0]])
    out.append(corr2d(X, K).tolist())
    out.append(corr2d(X.t(), K).abs().sum().item())
    net = nn.Sequential(
        nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 10)
    )
    net.apply(init_weights)
    out.append(tuple(net(torch.rand(2, 1, 28, 28)).shape))
    out.append(
        dropout_layer(torch.arange(16, dtype=torch.float32).reshape((2, 8)), 1.0).sum().item()
    )
    out.append(relu(torch.tensor([-1.0, 2.0])).tolist())
    net.apply(xavier)
    out.append([name for name, _ in net.named_parameters()])
    out.append(net[1].weight.data.shape[1])
    print(*[(name, param.shape) for name, param in net[1].named_parameters()])
    return out


def regression_data():
    rng = np.random.default_rng(0)
    features = torch.tensor(rng.standard_normal((100, 2)), dtype=torch.float32)
    true_w = torch.tensor([2, -3.4])
    labels = (torch.matmul(features, true_w) + 4.2).reshape((-1, 1))
    labels += torch.tensor(rng.normal(0, 0.01, (100, 1)), dtype=torch.float32)
    images = torch.tensor(rng.random((48, 1, 6, 6)), dtype=torch.float32)
    classes = torch.tensor(rng.integers(0, 10, 48))
    return features, labels, images, classes


def main():
    print(preliminaries())
    features, labels = synthetic_data(torch.tensor([2, -3.4]), 4.2, 100)
    net = nn.Sequential(nn.Linear(2, 1))
    net[0].weight.data.normal_(0, 0.01)
    net[0].bias.data.fill_(0)
    print(linear_regression_concise(features, labels, net))
    print(linear_regression_scratch(features, labels, torch.normal(0, 0.01, size=(2, 1))))
    print(shapes())
    _, _, images, classes = regression_data()
    print(softmax_regression_scratch(images, classes, torch.normal(0, 0.01, size=(36, 10))))
