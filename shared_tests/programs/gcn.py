"""A graph convolutional network (Kipf and Welling) in pytorch/examples' shape, on a synthetic graph.

The graph is a planted partition: nodes of the same class link often, others rarely,
and each node's features are a noisy copy of its class's centre (built with NumPy, so
both libraries see one graph). The adjacency matrix with self-loops is normalised
symmetrically, ``D^-1/2 (A + I) D^-1/2``, and kept as a sparse COO tensor; each graph
convolution is ``adj @ (x @ W) + b`` through ``torch.spmm``.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

NODES = 40
CLASSES = 4
FEATURES = 12
HIDDEN = 16
EPOCHS = 5

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def synthetic_graph(seed=0, p_in=0.3, p_out=0.02):
    """Edges (2, E) of an undirected planted-partition graph, features and labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, NODES)
    same = labels[:, None] == labels[None, :]
    linked = rng.random((NODES, NODES)) < np.where(same, p_in, p_out)
    linked = np.triu(linked, 1)
    linked = linked | linked.T
    edges = np.stack(np.nonzero(linked))
    centres = rng.normal(0, 1, (CLASSES, FEATURES))
    features = centres[labels] + rng.normal(0, 1.5, (NODES, FEATURES))
    return edges, features.astype(np.float32), labels


def normalize_adjacency(edges, n):
    """The sparse ``D^-1/2 (A + I) D^-1/2`` of an edge list, coalesced."""
    loops = torch.arange(n).repeat(2, 1)
    indices = torch.cat([torch.as_tensor(edges, dtype=torch.long), loops], dim=1)
    values = torch.ones(indices.size(1))
    adj = torch.sparse_coo_tensor(indices, values, (n, n)).coalesce()
    degree = torch.sparse.sum(adj, dim=1).to_dense()
    d_inv_sqrt = degree.pow(-0.5)
    d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0.0
    row, col = adj.indices()
    values = d_inv_sqrt[row] * adj.values() * d_inv_sqrt[col]
    return torch.sparse_coo_tensor(adj.indices(), values, (n, n)).to(device)


class GraphConv(nn.Module):
    """One graph convolution: every node averages its neighbours' transformed features."""

    def __init__(self, input_dim, output_dim, use_bias=True):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(output_dim)) if use_bias else None

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super().__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def split(n):
    """Half the nodes to train on, a quarter each to validate and test."""
    idx = torch.arange(n)
    return idx[: n // 2], idx[n // 2 : 3 * n // 4], idx[3 * n // 4 :]


def train_iter(epoch, model, optimizer, criterion, data, log):
    features, labels, adj_mat, idx_train, idx_val = data
    model.train()
    optimizer.zero_grad()
    output = model(features, adj_mat)
    loss = criterion(output[idx_train], labels[idx_train])
    loss.backward()
    optimizer.step()
    val_loss, val_acc = evaluate(model, criterion, features, labels, adj_mat, idx_val)
    log.extend([loss.item(), val_loss, val_acc])
    print(f"Epoch {epoch:03d} | Loss {loss.item():.4f} | Val {val_loss:.4f} acc {val_acc:.3f}")


def evaluate(model, criterion, features, labels, adj_mat, idx):
    model.eval()
    with torch.no_grad():
        output = model(features, adj_mat)
        loss = criterion(output[idx], labels[idx])
        acc = (output[idx].argmax(dim=1) == labels[idx]).float().mean()
    return loss.item(), acc.item()


def build(use_bias=True):
    torch.manual_seed(0)
    return GCN(FEATURES, HIDDEN, CLASSES, use_bias=use_bias).to(device)


def run(model, seed=0, epochs=EPOCHS):
    edges, features, labels = synthetic_graph(seed)
    adj_mat = normalize_adjacency(edges, NODES)
    features = torch.from_numpy(features).to(device)
    labels = torch.from_numpy(labels).to(device)
    idx_train, idx_val, idx_test = split(NODES)
    optimizer = optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    log = []
    data = (features, labels, adj_mat, idx_train.to(device), idx_val.to(device))
    for epoch in range(epochs):
        train_iter(epoch + 1, model, optimizer, criterion, data, log)
    test_loss, test_acc = evaluate(model, criterion, features, labels, adj_mat, idx_test.to(device))
    log.extend([test_loss, test_acc])
    return log


def dense_check(model, seed=0):
    """The same first layer with the adjacency made dense: what the sparse product must equal."""
    edges, features, _ = synthetic_graph(seed)
    adj = normalize_adjacency(edges, NODES)
    x = torch.from_numpy(features).to(device).requires_grad_()
    sparse_out = model.gc1(x, adj)
    dense_out = adj.to_dense() @ (x @ model.gc1.kernel) + model.gc1.bias
    (grad_sparse,) = torch.autograd.grad(sparse_out.pow(2).sum(), x)
    return sparse_out, dense_out, grad_sparse, adj


def main():
    model = build()
    run(model)
