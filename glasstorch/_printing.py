"""``repr(tensor)``: PyTorch's layout, so printed output matches torch's.

Floats print with 4 decimals (``0.5000``), or with a trailing dot when every
value is a whole number (``1.``), or in scientific notation when the values
span more than three orders of magnitude. Columns are padded to one width, and
nested rows are indented under ``tensor(``. Large tensors show their first and
last three entries along each dimension around ``...``.
"""

from __future__ import annotations

import math

SUMMARIZE_THRESHOLD = 1000
EDGE_ITEMS = 3
LINE_WIDTH = 80


def _float_formatter(values: list[float]):
    finite = [abs(v) for v in values if math.isfinite(v)]
    nonzero = [v for v in finite if v != 0]
    whole = all(v == math.floor(v) for v in finite)
    if whole:
        if nonzero and (max(nonzero) / min(nonzero) > 1000 or max(nonzero) > 1e8):
            return lambda v: _special(v) or f"{v:.4e}"
        return lambda v: _special(v) or f"{v:.0f}."
    if nonzero and (
        max(nonzero) / min(nonzero) > 1000 or max(nonzero) > 1e8 or min(nonzero) < 1e-4
    ):
        return lambda v: _special(v) or f"{v:.4e}"
    return lambda v: _special(v) or f"{v:.4f}"


def _special(v: float) -> str | None:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _formatter(tensor, values: list):
    if tensor.dtype.is_floating_point:
        return _float_formatter(values)
    if tensor.dtype.name == "bool":
        return lambda v: "True" if v else "False"
    return str


def _column_width(tensor, values: list, fmt) -> int:
    """Pad to the widest number; for floats only finite non-zero ones count (PyTorch's rule)."""
    if tensor.dtype.is_floating_point:
        values = [v for v in values if math.isfinite(v) and v != 0]
    return max((len(fmt(v)) for v in values), default=1)


def _summarized_values(array, summarize: bool) -> list:
    """All values that will be printed (the edges only, for a summarized tensor)."""
    if array.ndim == 0:
        return [array.item()]
    if summarize and array.shape[0] > 2 * EDGE_ITEMS:
        parts = [array[:EDGE_ITEMS], array[-EDGE_ITEMS:]]
    else:
        parts = [array]
    values = []
    for part in parts:
        for row in part:
            values.extend(_summarized_values(row, summarize))
    return values


def _render(array, fmt, width: int, indent: int, summarize: bool) -> str:
    if array.ndim == 0:
        return fmt(array.item()).rjust(width)
    if array.ndim == 1:
        items = [fmt(v).rjust(width) for v in array.tolist()]
        if summarize and len(items) > 2 * EDGE_ITEMS:
            items = items[:EDGE_ITEMS] + [" ..."] + items[-EDGE_ITEMS:]
        # Wrap long rows at the line width, as PyTorch does.
        per_line = max(1, (LINE_WIDTH - indent) // (width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = list(range(array.shape[0]))
    if summarize and len(rows) > 2 * EDGE_ITEMS:
        rows = rows[:EDGE_ITEMS] + [None] + rows[-EDGE_ITEMS:]
    rendered = [
        "..." if r is None else _render(array[r], fmt, width, indent + 1, summarize) for r in rows
    ]
    separator = "," + "\n" * (array.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(rendered) + "]"


def tensor_repr(tensor, prefix: str = "tensor(", *, inner_at: int | None = None) -> str:
    """The text ``repr`` shows for ``tensor``, in PyTorch's format.

    ``inner_at`` prints a part of a sparse tensor (its indices or values) that
    starts at that column: continuation lines line up under it, and only the
    size of an empty part follows the values (the sparse tensor names the rest).
    """
    on_device = tensor.is_cuda
    if on_device:  # printing reads the values: a device-to-host copy, which waits
        host = tensor.detach().cpu()
        array = host.numpy()
    else:
        array = tensor.detach().numpy()
    suffixes = []
    default_dtypes = ("float32", "int64", "bool")
    indent = len(prefix) + (inner_at or 0)
    if tensor.numel() == 0:
        body = "[]"
        if tensor.dim() != 1 or inner_at is not None:
            suffixes.append(f"size={tuple(tensor.shape)}")
    else:
        summarize = tensor.numel() > SUMMARIZE_THRESHOLD
        values = _summarized_values(array, summarize)
        fmt = _formatter(tensor, values)
        width = _column_width(tensor, values, fmt)
        body = _render(array, fmt, width, indent, summarize)
    if inner_at is not None:
        return _with_suffixes(prefix + body, suffixes, indent)
    if on_device:
        suffixes.append(f"device='{tensor.device}'")
    if tensor.dtype.name not in default_dtypes or (
        tensor.numel() == 0 and tensor.dtype.name != "float32"
    ):
        suffixes.append(f"dtype=torch.{tensor.dtype.name}")
    if tensor.grad_fn is not None:
        suffixes.append(f"grad_fn=<{tensor.grad_fn.name()}>")
    elif tensor.requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + body, suffixes, len(prefix))


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Append ``, dtype=...``, ``, grad_fn=...``: each goes on the current line if
    it fits in the line width, else on a new line indented under ``tensor(``
    (PyTorch's rule, which counts the last line as two characters longer)."""
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > LINE_WIDTH:
            text += ",\n" + " " * indent + suffix
            last_line = indent + len(suffix)
        else:
            text += ", " + suffix
            last_line += len(suffix) + 2
    return text + ")"
