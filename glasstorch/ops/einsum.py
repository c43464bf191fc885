"""``einsum``: Einstein summation, built from permute, reshape, matmul and sum.

An equation names each dimension of each operand with a letter: ``"ij,jk->ik"``
is a matrix product. The rules (PyTorch's):

* a letter in two operands pairs those dimensions (their sizes must agree, or
  one of them is 1 and broadcasts);
* a letter repeated in one operand (``"ii->i"``) takes a diagonal;
* a letter that is not in the output is summed over;
* ``...`` stands for the remaining dimensions, broadcast across operands;
* without ``->`` the output is ``...`` followed by the letters that appear
  exactly once, in alphabetical order.

The computation works on one operand at a time, carrying a list of labels
for the current tensor's dims:

1. each operand: take diagonals for repeated letters, sum out letters used
   nowhere else;
2. fold the operands left to right: two operands become one ``matmul`` of
   shape ``(batch, left-only, summed) @ (batch, summed, right-only)``;
3. sum what is left over and permute into the output's order.

Every step is a differentiable operation, so gradients need no code here.
"""

from __future__ import annotations

from glasstorch.ops.shape import diagonal
from glasstorch.tensor import Tensor

#: Labels for the dims an ellipsis covers: characters no equation can contain.
_ELLIPSIS_LABELS = [chr(0x2460 + i) for i in range(16)]


def _error(message: str) -> RuntimeError:
    return RuntimeError(f"einsum(): {message}")


def _parse_operand(term: str, tensor: Tensor, index: int, ellipsis_dims: int) -> list[str]:
    """The label of each dim of ``tensor`` (ellipsis dims get right-aligned shared labels)."""
    letters = term.replace("...", "")
    for letter in letters:
        if not letter.isalpha():
            raise _error(f"invalid subscript given at index {term.index(letter)} in the equation")
    if "..." not in term:
        if len(letters) != tensor.dim():
            raise _error(
                f"the number of subscripts in the equation ({len(letters)}) does not match the "
                f"number of dimensions ({tensor.dim()}) for operand {index} and no ellipsis "
                "was given"
            )
        return list(letters)
    covered = tensor.dim() - len(letters)
    if covered < 0:
        raise _error(
            f"the number of subscripts in the equation ({len(letters)}) is more than the "
            f"number of dimensions ({tensor.dim()}) for operand {index}"
        )
    before, after = term.split("...")
    return list(before) + _ELLIPSIS_LABELS[ellipsis_dims - covered : ellipsis_dims] + list(after)


def _parse(equation: str, operands) -> tuple[list[list[str]], list[str]]:
    """Labels of each operand's dims and of the output's dims."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) < len(operands):
        raise _error("more operands were provided than specified in the equation")
    if len(terms) > len(operands):
        raise _error("fewer operands were provided than specified in the equation")
    ellipsis_dims = max(
        (
            t.dim() - len(term.replace("...", ""))
            for term, t in zip(terms, operands)
            if "..." in term
        ),
        default=0,
    )
    labels = [
        _parse_operand(term, t, i, ellipsis_dims)
        for i, (term, t) in enumerate(zip(terms, operands))
    ]
    ellipsis = _ELLIPSIS_LABELS[:ellipsis_dims]
    if arrow:
        out = list(output.replace("...", "\0"))
        out_labels = []
        for letter in out:
            out_labels += ellipsis if letter == "\0" else [letter]
        for letter in output.replace("...", ""):
            if not any(letter in term for term in labels):
                raise _error(
                    f"output subscript {letter} does not appear in the equation for any input "
                    "operand"
                )
    else:
        counts = {}
        for term in labels:
            for letter in term:
                counts[letter] = counts.get(letter, 0) + 1
        singles = sorted(
            letter for letter, n in counts.items() if n == 1 and letter not in ellipsis
        )
        out_labels = ellipsis + singles
    return labels, out_labels


def _check_sizes(labels, operands) -> None:
    """A letter's size must agree across operands, or be 1 (which broadcasts)."""
    seen = {}
    for index, (term, tensor) in enumerate(zip(labels, operands)):
        for letter, size in zip(term, tensor.shape):
            previous = seen.get(letter, 1)
            if size != previous and 1 not in (size, previous):
                raise _error(
                    f"subscript {letter} has size {size} for operand {index} which does not "
                    f"broadcast with previously seen size {previous}"
                )
            seen[letter] = max(previous, size) if 1 in (size, previous) else size


def _take_diagonals(tensor: Tensor, term: list[str]) -> tuple[Tensor, list[str]]:
    """For a letter repeated in one operand, keep only the diagonal (its dims merge into one)."""
    term = list(term)
    while len(set(term)) != len(term):
        for first, letter in enumerate(term):
            if letter in term[first + 1 :]:
                second = term.index(letter, first + 1)
                tensor = diagonal(tensor, 0, first, second)  # the diagonal becomes the last dim
                term = [x for i, x in enumerate(term) if i not in (first, second)] + [letter]
                break
    return tensor, term


def _sum_out(tensor: Tensor, term: list[str], keep) -> tuple[Tensor, list[str]]:
    """Sum over the dims whose labels are not in ``keep``."""
    dims = tuple(i for i, letter in enumerate(term) if letter not in keep)
    if not dims:
        return tensor, term
    return tensor.sum(dims), [letter for letter in term if letter in keep]


def _contract(a: Tensor, la: list[str], b: Tensor, lb: list[str], keep) -> tuple[Tensor, list[str]]:
    """``a`` and ``b`` combined into one tensor by one batched matmul."""
    # A letter of size 1 on one side and n on the other is a broadcast: if it is
    # summed, summing the n side first gives the same answer.
    for letter in set(la) & set(lb):
        size_a, size_b = a.shape[la.index(letter)], b.shape[lb.index(letter)]
        if letter not in keep and size_a != size_b:
            if size_a == 1:
                b = b.sum(lb.index(letter), keepdim=True)
            else:
                a = a.sum(la.index(letter), keepdim=True)
    batch = [x for x in la if x in lb and x in keep]
    summed = [x for x in la if x in lb and x not in keep]
    only_a = [x for x in la if x not in lb]
    only_b = [x for x in lb if x not in la]
    a = a.permute([la.index(x) for x in batch + only_a + summed])
    b = b.permute([lb.index(x) for x in batch + summed + only_b])
    batch_sizes = [max(a.shape[i], b.shape[i]) for i in range(len(batch))]
    a = a.expand(*batch_sizes, *a.shape[len(batch) :])
    b = b.expand(*batch_sizes, *b.shape[len(batch) :])
    sizes_a = list(a.shape[len(batch) : len(batch) + len(only_a)])
    sizes_b = list(b.shape[len(batch) + len(summed) :])
    rows, inner, cols = (
        _product(sizes_a),
        _product(a.shape[len(batch) + len(only_a) :]),
        _product(sizes_b),
    )
    product = a.reshape(*batch_sizes, rows, inner) @ b.reshape(*batch_sizes, inner, cols)
    return product.reshape(*batch_sizes, *sizes_a, *sizes_b), batch + only_a + only_b


def _product(sizes) -> int:
    total = 1
    for size in sizes:
        total *= size
    return total


def _sublist_letters(sublist) -> str:
    """A sublist (``[0, 1]``, ``[..., 2]``) as equation letters (``"AB"``, ``"...C"``).

    Subscripts 0-25 become ``A``-``Z`` and 26-51 ``a``-``z``, so their
    alphabetical order (which orders an implicit output) is their numeric order.
    """
    letters = ""
    for subscript in sublist:
        if subscript is Ellipsis:
            letters += "..."
        elif isinstance(subscript, int) and 0 <= subscript < 52:
            letters += (
                chr(ord("A") + subscript) if subscript < 26 else chr(ord("a") + subscript - 26)
            )
        else:
            raise ValueError(
                "einsum(): subscript in subscript list is not within the valid range [0, 52)"
            )
    return letters


def _from_sublists(arguments: tuple) -> tuple[str, tuple]:
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as ``("AB,BC->AC", (a, b))``."""
    operands = arguments[0::2]
    terms = [_sublist_letters(sublist) for sublist in arguments[1::2]]
    if len(arguments) % 2:  # a trailing output sublist
        operands = operands[:-1]
        output = _sublist_letters(arguments[-1])
        return ",".join(terms) + "->" + output, operands
    return ",".join(terms), operands


def einsum(equation: str, *operands) -> Tensor:
    """Sum of products of ``operands``' elements, as ``equation`` describes.

    Args:
        equation: e.g. ``"ij,jk->ik"`` (matrix product), ``"bij,bjk->bik"``
            (batched), ``"ii"`` (trace), ``"i,j->ij"`` (outer product),
            ``"...ij->...ji"`` (transpose of the last two dims).
        operands: the tensors, one per comma-separated term (a single list of
            tensors is accepted too).

    The sublist form is accepted too: ``einsum(A, [0, 1], x, [1], [0])`` is
    ``einsum("ij,j->i", A, x)``, each operand followed by the list of its
    subscripts (ints in ``[0, 52)`` or ``...``), then optionally the output's.

    Example:
        >>> torch.einsum("ij,j->i", A, x)  # A @ x
    """
    if isinstance(equation, Tensor):
        equation, operands = _from_sublists((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    labels, out_labels = _parse(equation, operands)
    _check_sizes(labels, operands)
    tensors, terms = [], []
    for index, (tensor, term) in enumerate(zip(operands, labels)):
        tensor, term = _take_diagonals(tensor, term)
        elsewhere = set(out_labels).union(*(set(t) for i, t in enumerate(labels) if i != index))
        tensor, term = _sum_out(tensor, term, elsewhere)
        tensors.append(tensor)
        terms.append(term)
    result, term = tensors[0], terms[0]
    for index in range(1, len(tensors)):
        keep = set(out_labels).union(*(set(t) for t in terms[index + 1 :]))
        result, term = _contract(result, term, tensors[index], terms[index], keep)
    result, term = _sum_out(result, term, set(out_labels))
    if term != out_labels:
        result = result.permute([term.index(x) for x in out_labels])
    return result
