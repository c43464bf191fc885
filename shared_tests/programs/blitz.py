"""PyTorch's "Deep Learning with PyTorch: A 60 Minute Blitz": tensors, autograd, the CIFAR CNN."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

SAMPLES = 16
BATCH = 4
classes = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


def tensors_part():
    """The "Tensors" page: creation, attributes, operations, the NumPy bridge."""
    data = [[1, 2], [3, 4]]
    x_data = torch.tensor(data)
    np_array = np.array(data)
    x_np = torch.from_numpy(np_array)
    x_ones = torch.ones_like(x_data)
    x_rand = torch.rand_like(x_data, dtype=torch.float)
    shape = (2, 3)
    rand_tensor = torch.rand(shape)
    ones_tensor = torch.ones(shape)
    zeros_tensor = torch.zeros(shape)
    print(
        f"Ones Tensor: \n {x_ones} \n", f"Random Tensor: \n {x_rand} \n", rand_tensor, zeros_tensor
    )
    tensor = torch.rand(3, 4)
    print(f"Shape of tensor: {tensor.shape}")
    print(f"Datatype of tensor: {tensor.dtype}")
    print(f"Device tensor is stored on: {tensor.device}")
    if torch.accelerator.is_available():
        tensor = tensor.to(torch.accelerator.current_accelerator())
    tensor = torch.ones(4, 4)
    print(f"First row: {tensor[0]}")
    print(f"First column: {tensor[:, 0]}")
    print(f"Last column: {tensor[..., -1]}")
    tensor[:, 1] = 0
    t1 = torch.cat([tensor, tensor, tensor], dim=1)
    y1 = tensor @ tensor.T
    y2 = tensor.matmul(tensor.T)
    y3 = torch.rand_like(y1)
    torch.matmul(tensor, tensor.T, out=y3)
    z1 = tensor * tensor
    z2 = tensor.mul(tensor)
    z3 = torch.rand_like(tensor)
    torch.mul(tensor, tensor, out=z3)
    agg = tensor.sum()
    agg_item = agg.item()
    print(agg_item, type(agg_item))
    tensor.add_(5)
    t = torch.ones(5)
    n = t.numpy()
    t.add_(1)
    shared_after_add = n.tolist()
    n = np.ones(5)
    t = torch.from_numpy(n)
    np.add(n, 1, out=n)
    print(f"t: {t}")
    print(f"n: {n}")
    return [
        x_np.sum().item(), t1.shape[1], y1.sum().item(), y2.sum().item(), y3.sum().item(),
        z1.sum().item(), z2.sum().item(), z3.sum().item(), tensor.sum().item(),
        *shared_after_add, *t.tolist(), ones_tensor.sum().item(),
    ]  # fmt: skip


def autograd_part():
    """The "A Gentle Introduction to torch.autograd" page."""
    a = torch.tensor([2.0, 3.0], requires_grad=True)
    b = torch.tensor([6.0, 4.0], requires_grad=True)
    Q = 3 * a**3 - b**2
    external_grad = torch.tensor([1.0, 1.0])
    Q.backward(gradient=external_grad)
    print(9 * a**2 == a.grad)
    print(-2 * b == b.grad)
    x = torch.rand(5, 5)
    y = torch.rand(5, 5)
    z = torch.rand((5, 5), requires_grad=True)
    a2 = x + y
    print(f"Does `a` require gradients?: {a2.requires_grad}")
    b2 = x + z
    print(f"Does `b` require gradients?: {b2.requires_grad}")
    return a.grad.tolist() + b.grad.tolist()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)  # flatten all dimensions except batch
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def build():
    return Net()


def run(net, epochs=1):
    """Train the CIFAR-10 classifier on random CIFAR-shaped data, then test it per class."""
    rng = np.random.default_rng(0)
    images = torch.tensor(rng.standard_normal((SAMPLES, 3, 32, 32)), dtype=torch.float32)
    targets = torch.tensor(rng.integers(0, 10, SAMPLES))
    trainloader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images, targets), batch_size=BATCH, shuffle=False
    )
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    log = []
    for epoch in range(epochs):
        running_loss = 0.0
        for i, data in enumerate(trainloader, 0):
            inputs, labels = data
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            log.append(loss.item())
            if i % 2 == 1:
                print(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 2:.3f}")
                running_loss = 0.0
    dataiter = iter(trainloader)
    images, labels = next(dataiter)
    print("GroundTruth: ", " ".join(f"{classes[labels[j]]:5s}" for j in range(4)))
    outputs = net(images)
    _, predicted = torch.max(outputs, 1)
    print("Predicted: ", " ".join(f"{classes[predicted[j]]:5s}" for j in range(4)))
    correct = 0
    total = 0
    correct_pred = {classname: 0 for classname in classes}
    total_pred = {classname: 0 for classname in classes}
    with torch.no_grad():
        for data in trainloader:
            images, labels = data
            outputs = net(images)
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
            for label, prediction in zip(labels, predicted):
                if label == prediction:
                    correct_pred[classes[label]] += 1
                total_pred[classes[label]] += 1
    print(f"Accuracy of the network on the test images: {100 * correct // total} %")
    for classname, correct_count in correct_pred.items():
        if total_pred[classname]:
            accuracy = 100 * float(correct_count) / total_pred[classname]
            print(f"Accuracy for class: {classname:5s} is {accuracy:.1f} %")
    log.append(correct)
    return log


def main():
    print(tensors_part(), autograd_part())
    net = build()
    print(run(net))
