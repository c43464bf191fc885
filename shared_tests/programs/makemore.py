"""nn-zero-to-hero's makemore lectures: bigram counts, a one-hot net, the MLP, batchnorm, backprop."""
# ruff: noqa: B007, UP031 - the public programs' own idioms, kept as they are written

import random

import torch
import torch.nn.functional as F

words = [
    "emma", "olivia", "ava", "isabella", "sophia", "charlotte", "mia", "amelia", "harper",
    "evelyn", "abigail", "emily", "elizabeth", "mila", "ella", "avery", "sofia", "camila",
    "aria", "scarlett", "victoria", "madison", "luna", "grace", "chloe", "penelope", "layla",
    "riley", "zoey", "nora", "lily", "eleanor", "hannah", "lillian", "addison", "aubrey",
    "ellie", "stella", "natalie", "zoe", "leah", "hazel", "violet", "aurora", "savannah",
    "audrey", "brooklyn", "bella", "claire", "skylar", "quinn", "jade", "wren", "xena", "kai",
]  # fmt: skip

chars = sorted(list(set("".join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi["."] = 0
itos = {i: s for s, i in stoi.items()}
vocab_size = len(itos)
block_size = 3


def bigram_counts():
    """Part 1: count bigrams in a tensor, normalise rows, sample names, score the model."""
    N = torch.zeros((vocab_size, vocab_size), dtype=torch.int32)
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            ix1 = stoi[ch1]
            ix2 = stoi[ch2]
            N[ix1, ix2] += 1
    P = (N + 1).float()
    P /= P.sum(1, keepdims=True)
    g = torch.Generator().manual_seed(2147483647)
    names = []
    for i in range(3):
        out = []
        ix = 0
        while True:
            p = P[ix]
            ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
            out.append(itos[ix])
            if ix == 0 or len(out) > 20:
                break
        names.append("".join(out))
    log_likelihood = 0.0
    n = 0
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            prob = P[stoi[ch1], stoi[ch2]]
            logprob = torch.log(prob)
            log_likelihood += logprob
            n += 1
    nll = -log_likelihood
    print(f"{log_likelihood=}")
    print(f"{nll / n}")
    return [N.sum().item(), N[0].argmax().item(), (nll / n).item()], names


def one_hot_net(W, steps=5):
    """Part 1 again: the bigram model as a single linear layer trained by gradient descent."""
    xs, ys = [], []
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            xs.append(stoi[ch1])
            ys.append(stoi[ch2])
    xs = torch.tensor(xs)
    ys = torch.tensor(ys)
    num = xs.nelement()
    W = W.clone().requires_grad_()
    log = []
    for k in range(steps):
        xenc = F.one_hot(xs, num_classes=vocab_size).float()
        logits = xenc @ W
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdims=True)
        loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W**2).mean()
        W.grad = None
        loss.backward()
        W.data += -50 * W.grad
        log.append(loss.item())
    return log


def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + ".":
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    X = torch.tensor(X)
    Y = torch.tensor(Y)
    return X, Y


def mlp_parameters(n_embd=10, n_hidden=64, seed=2147483647):
    """Part 3's initialisation: kaiming-scaled weights, small output layer, batchnorm gain/bias."""
    g = torch.Generator().manual_seed(seed)
    C = torch.randn((vocab_size, n_embd), generator=g)
    W1 = (
        torch.randn((n_embd * block_size, n_hidden), generator=g)
        * (5 / 3)
        / ((n_embd * block_size) ** 0.5)
    )
    b1 = torch.randn(n_hidden, generator=g) * 0.01
    W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.01
    b2 = torch.randn(vocab_size, generator=g) * 0
    bngain = torch.ones((1, n_hidden))
    bnbias = torch.zeros((1, n_hidden))
    return [C, W1, b1, W2, b2, bngain, bnbias]


def train_mlp(parameters, steps=4, batch_size=None, seed=42):
    """Part 3: an MLP with a hand-written batchnorm layer; batch_size=None uses every example."""
    random.seed(seed)
    shuffled = words[:]
    random.shuffle(shuffled)
    n1 = int(0.8 * len(shuffled))
    Xtr, Ytr = build_dataset(shuffled[:n1])
    Xdev, Ydev = build_dataset(shuffled[n1:])
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    n_hidden = W1.shape[1]
    bnmean_running = torch.zeros((1, n_hidden))
    bnstd_running = torch.ones((1, n_hidden))
    print(sum(p.nelement() for p in parameters))
    for p in parameters:
        p.requires_grad = True
    g = torch.Generator().manual_seed(2147483647)
    lossi = []
    for i in range(steps):
        if batch_size is None:
            ix = torch.arange(Xtr.shape[0])
        else:
            ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)
        Xb, Yb = Xtr[ix], Ytr[ix]
        emb = C[Xb]
        embcat = emb.view(emb.shape[0], -1)
        hpreact = embcat @ W1 + b1
        bnmeani = hpreact.mean(0, keepdim=True)
        bnstdi = hpreact.std(0, keepdim=True)
        hpreact = bngain * (hpreact - bnmeani) / bnstdi + bnbias
        with torch.no_grad():
            bnmean_running = 0.999 * bnmean_running + 0.001 * bnmeani
            bnstd_running = 0.999 * bnstd_running + 0.001 * bnstdi
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        loss = F.cross_entropy(logits, Yb)
        for p in parameters:
            p.grad = None
        loss.backward()
        lr = 0.1 if i < 100000 else 0.01
        for p in parameters:
            p.data += -lr * p.grad
        if i % 2 == 0:
            print(f"{i:7d}/{steps:7d}: {loss.item():.4f}")
        lossi.append(loss.log10().item())

    @torch.no_grad()
    def split_loss(x, y):
        emb = C[x]
        embcat = emb.view(emb.shape[0], -1)
        hpreact = embcat @ W1 + b1
        hpreact = bngain * (hpreact - bnmean_running) / bnstd_running + bnbias
        h = torch.tanh(hpreact)
        logits = h @ W2 + b2
        return F.cross_entropy(logits, y).item()

    lossi.extend([split_loss(Xtr, Ytr), split_loss(Xdev, Ydev)])
    return lossi


def sample(parameters, count=3):
    """Sample names from the MLP, drawing with a seeded generator."""
    C, W1, b1, W2, b2, bngain, bnbias = parameters
    g = torch.Generator().manual_seed(2147483647 + 10)
    names = []
    for _ in range(count):
        out = []
        context = [0] * block_size
        while True:
            emb = C[torch.tensor([context])]
            h = torch.tanh(emb.view(1, -1) @ W1 + b1)
            logits = h @ W2 + b2
            probs = F.softmax(logits, dim=1)
            ix = torch.multinomial(probs, num_samples=1, generator=g).item()
            context = context[1:] + [ix]
            out.append(ix)
            if ix == 0 or len(out) > 15:
                break
        names.append("".join(itos[i] for i in out))
    return names


def cmp(s, dt, t):
    ex = torch.all(dt == t.grad).item()
    app = torch.allclose(dt, t.grad)
    maxdiff = (dt - t.grad).abs().max().item()
    print(f"{s:15s} | exact: {str(ex):5s} | approximate: {str(app):5s} | maxdiff: {maxdiff}")
    return app


def backprop_ninja(parameters, n=32):
    """Part 4: the loss written out step by step, its gradient computed by hand and checked."""
    C, W1, b1, W2, b2, bngain, bnbias = [p.detach().clone().requires_grad_() for p in parameters]
    Xb, Yb = build_dataset(words[:12])
    Xb, Yb = Xb[:n], Yb[:n]
    n = Xb.shape[0]
    emb = C[Xb]
    embcat = emb.view(emb.shape[0], -1)
    hprebn = embcat @ W1 + b1
    bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
    bndiff = hprebn - bnmeani
    bndiff2 = bndiff**2
    bnvar = 1 / (n - 1) * (bndiff2).sum(0, keepdim=True)
    bnvar_inv = (bnvar + 1e-5) ** -0.5
    bnraw = bndiff * bnvar_inv
    hpreact = bngain * bnraw + bnbias
    h = torch.tanh(hpreact)
    logits = h @ W2 + b2
    logit_maxes = logits.max(1, keepdim=True).values
    norm_logits = logits - logit_maxes
    counts = norm_logits.exp()
    counts_sum = counts.sum(1, keepdims=True)
    counts_sum_inv = counts_sum**-1
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    loss = -logprobs[range(n), Yb].mean()
    for p in [C, W1, b1, W2, b2, bngain, bnbias]:
        p.grad = None
    for t in [logprobs, probs, counts, counts_sum, counts_sum_inv, norm_logits, logit_maxes, logits,
              h, hpreact, bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani, embcat, emb]:  # fmt: skip
        t.retain_grad()
    loss.backward()
    dlogprobs = torch.zeros_like(logprobs)
    dlogprobs[range(n), Yb] = -1.0 / n
    dprobs = (1.0 / probs) * dlogprobs
    dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)
    dcounts = counts_sum_inv * dprobs
    dcounts_sum = (-(counts_sum**-2)) * dcounts_sum_inv
    dcounts += torch.ones_like(counts) * dcounts_sum
    dnorm_logits = counts * dcounts
    dlogits = dnorm_logits.clone()
    dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)
    dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes
    dh = dlogits @ W2.T
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(0)
    dhpreact = (1.0 - h**2) * dh
    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)
    dbnraw = bngain * dhpreact
    dbnbias = dhpreact.sum(0, keepdim=True)
    dbndiff = bnvar_inv * dbnraw
    dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)
    dbnvar = (-0.5 * (bnvar + 1e-5) ** -1.5) * dbnvar_inv
    dbndiff2 = (1.0 / (n - 1)) * torch.ones_like(bndiff2) * dbnvar
    dbndiff += (2 * bndiff) * dbndiff2
    dhprebn = dbndiff.clone()
    dbnmeani = (-dbndiff).sum(0)
    dhprebn += 1.0 / n * (torch.ones_like(hprebn) * dbnmeani)
    dembcat = dhprebn @ W1.T
    dW1 = embcat.T @ dhprebn
    db1 = dhprebn.sum(0)
    demb = dembcat.view(emb.shape)
    dC = torch.zeros_like(C)
    for k in range(Xb.shape[0]):
        for j in range(Xb.shape[1]):
            ix = Xb[k, j]
            dC[ix] += demb[k, j]
    dlogits_fast = F.softmax(logits, 1)
    dlogits_fast[range(n), Yb] -= 1
    dlogits_fast /= n
    checks = [
        cmp("logprobs", dlogprobs, logprobs), cmp("probs", dprobs, probs),
        cmp("counts_sum_inv", dcounts_sum_inv, counts_sum_inv), cmp("counts", dcounts, counts),
        cmp("logit_maxes", dlogit_maxes, logit_maxes), cmp("logits", dlogits, logits),
        cmp("logits fast", dlogits_fast, logits), cmp("h", dh, h), cmp("W2", dW2, W2),
        cmp("b2", db2, b2), cmp("bngain", dbngain, bngain), cmp("bnbias", dbnbias, bnbias),
        cmp("bnvar", dbnvar, bnvar), cmp("hprebn", dhprebn, hprebn), cmp("W1", dW1, W1),
        cmp("b1", db1, b1), cmp("emb", demb, emb), cmp("C", dC, C),
    ]  # fmt: skip
    return loss.item(), checks


# ---------------------------------------------------------------- part 5: torch-ified layers
class Linear:
    def __init__(self, fan_in, fan_out, bias=True):
        self.weight = torch.randn((fan_in, fan_out)) / fan_in**0.5
        self.bias = torch.zeros(fan_out) if bias else None

    def __call__(self, x):
        self.out = x @ self.weight
        if self.bias is not None:
            self.out += self.bias
        return self.out

    def parameters(self):
        return [self.weight] + ([] if self.bias is None else [self.bias])


class BatchNorm1d:
    def __init__(self, dim, eps=1e-5, momentum=0.1):
        self.eps = eps
        self.momentum = momentum
        self.training = True
        self.gamma = torch.ones(dim)
        self.beta = torch.zeros(dim)
        self.running_mean = torch.zeros(dim)
        self.running_var = torch.ones(dim)

    def __call__(self, x):
        if self.training:
            if x.ndim == 2:
                dim = 0
            elif x.ndim == 3:
                dim = (0, 1)
            xmean = x.mean(dim, keepdim=True)
            xvar = x.var(dim, keepdim=True)
        else:
            xmean = self.running_mean
            xvar = self.running_var
        xhat = (x - xmean) / torch.sqrt(xvar + self.eps)
        self.out = self.gamma * xhat + self.beta
        if self.training:
            with torch.no_grad():
                self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
                self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
        return self.out

    def parameters(self):
        return [self.gamma, self.beta]


class Tanh:
    def __call__(self, x):
        self.out = torch.tanh(x)
        return self.out

    def parameters(self):
        return []


class Embedding:
    def __init__(self, num_embeddings, embedding_dim):
        self.weight = torch.randn((num_embeddings, embedding_dim))

    def __call__(self, IX):
        self.out = self.weight[IX]
        return self.out

    def parameters(self):
        return [self.weight]


class FlattenConsecutive:
    def __init__(self, n):
        self.n = n

    def __call__(self, x):
        B, T, C = x.shape
        x = x.view(B, T // self.n, C * self.n)
        if x.shape[1] == 1:
            x = x.squeeze(1)
        self.out = x
        return self.out

    def parameters(self):
        return []


class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        self.out = x
        return self.out

    def parameters(self):
        return [p for layer in self.layers for p in layer.parameters()]


def wavenet(n_embd=8, n_hidden=32):
    """Part 5's hierarchical model (block size 8: three FlattenConsecutive(2) stages)."""
    torch.manual_seed(42)
    model = Sequential([
        Embedding(vocab_size, n_embd),
        FlattenConsecutive(2), Linear(n_embd * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
        FlattenConsecutive(2), Linear(n_hidden * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
        FlattenConsecutive(2), Linear(n_hidden * 2, n_hidden, bias=False), BatchNorm1d(n_hidden), Tanh(),
        Linear(n_hidden, vocab_size),
    ])  # fmt: skip
    with torch.no_grad():
        model.layers[-1].weight *= 0.1
    return model


def train_wavenet(model, steps=3):
    global block_size
    saved, block_size = block_size, 8
    try:
        X, Y = build_dataset(words[:20])
    finally:
        block_size = saved
    parameters = model.parameters()
    for p in parameters:
        p.requires_grad = True
    log = []
    for i in range(steps):
        logits = model(X)
        loss = F.cross_entropy(logits, Y)
        for layer in model.layers:
            layer.out.retain_grad()
        for p in parameters:
            p.grad = None
        loss.backward()
        for p in parameters:
            p.data += -0.1 * p.grad
        log.append(loss.item())
    for layer in model.layers:
        layer.training = False
    with torch.no_grad():
        log.append(F.cross_entropy(model(X), Y).item())
    ud = [((0.1 * p.grad).std() / p.data.std()).log10().item() for p in parameters if p.ndim == 2]
    return log, ud


def main():
    print(bigram_counts())
    g = torch.Generator().manual_seed(2147483647)
    print(one_hot_net(torch.randn((vocab_size, vocab_size), generator=g)))
    parameters = mlp_parameters()
    print(train_mlp(parameters, steps=10, batch_size=32))
    print(sample(parameters))
    print(backprop_ninja(parameters))
    print(train_wavenet(wavenet()))
