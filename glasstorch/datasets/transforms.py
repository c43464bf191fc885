"""Image transforms in the style of ``torchvision.transforms``, without PIL.

Images come in two forms:

* **arrays**: NumPy arrays laid out like a PIL image, ``(H, W)`` or ``(H, W, C)``,
  usually ``uint8`` (what the dataset readers return, and what PIL images turn into
  with ``numpy.asarray``). PIL images are accepted too, and treated as such arrays.
* **tensors**: glasstorch tensors laid out ``(..., C, H, W)``, as ``ToTensor`` makes.

The random transforms draw from glasstorch's generator (``glasstorch.rand`` and
``glasstorch.randint``), so ``glasstorch.manual_seed`` makes them repeat, and a
DataLoader that seeds each worker makes a multi-process pipeline reproducible.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import glasstorch
from glasstorch.tensor import Tensor

__all__ = [
    "Compose",
    "ToTensor",
    "Normalize",
    "RandomHorizontalFlip",
    "RandomCrop",
    "Lambda",
]


def _is_pil_image(obj: Any) -> bool:
    return type(obj).__module__.startswith("PIL.") and hasattr(obj, "getbands")


def _as_image_array(pic: Any) -> np.ndarray | None:
    """A NumPy view of an array or PIL image; ``None`` for anything else."""
    if isinstance(pic, np.ndarray):
        return pic
    if _is_pil_image(pic):
        return np.asarray(pic)
    return None


class Compose:
    """Apply transforms one after another.

    Args:
        transforms: the transforms, in order.

    Example::

        >>> Compose([ToTensor(), Normalize((0.5,), (0.5,))])
    """

    def __init__(self, transforms: Sequence[Callable]):
        self.transforms = transforms

    def __call__(self, img: Any) -> Any:
        for transform in self.transforms:
            img = transform(img)
        return img

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}("]
        lines += [f"    {transform}" for transform in self.transforms]
        return "\n".join(lines) + "\n)"


class ToTensor:
    """Convert an ``(H, W, C)`` or ``(H, W)`` image array to a ``(C, H, W)`` tensor.

    ``uint8`` images are scaled from 0..255 to float32 values in ``[0, 1]``; a
    2-D image gets one channel, ``(1, H, W)``. Arrays of other dtypes keep their
    dtype and values, as in torchvision. The result is a new, contiguous tensor.
    """

    def __call__(self, pic: Any) -> Tensor:
        array = _as_image_array(pic)
        if array is None:
            raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
        if array.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {array.ndim} dimensions.")
        if array.ndim == 2:
            array = array[:, :, None]
        chw = np.ascontiguousarray(array.transpose(2, 0, 1))
        if chw.dtype == np.uint8:
            return glasstorch.from_numpy((chw / np.float32(255)).astype(np.float32))
        if chw.dtype == np.float16:
            chw = chw.astype(np.float32)
        return glasstorch.from_numpy(chw.copy())

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Normalize:
    """Normalize a float tensor image per channel: ``(x - mean[c]) / std[c]``.

    Args:
        mean: one mean per channel (a sequence).
        std: one standard deviation per channel.
        inplace: write the result into the input tensor.

    Shape:
        Input ``(..., C, H, W)``; output the same.
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False):
        self.mean = mean
        self.std = std
        self.inplace = inplace

    def __call__(self, tensor: Tensor) -> Tensor:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Input tensor should be a torch tensor. Got {type(tensor)}.")
        if not tensor.is_floating_point():
            raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
        if tensor.dim() < 3:
            raise ValueError(
                "Expected tensor to be a tensor image of size (..., C, H, W). Got "
                f"tensor.size() = {tuple(tensor.shape)}"
            )
        dtype = tensor.dtype.numpy
        mean = np.asarray(self.mean, dtype=dtype).reshape(-1)
        std = np.asarray(self.std, dtype=dtype).reshape(-1)
        if (std == 0).any():
            raise ValueError(
                f"std evaluated to zero after conversion to {tensor.dtype}, leading to "
                "division by zero."
            )
        # mean and std go to the image's device, so a CUDA image is normalized there.
        mean = glasstorch.from_numpy(mean.reshape(-1, 1, 1)).to(tensor.device)
        std = glasstorch.from_numpy(std.reshape(-1, 1, 1)).to(tensor.device)
        if self.inplace:
            return tensor.sub_(mean).div_(std)
        return (tensor - mean) / std

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


def _hflip(img: Any) -> Any:
    """Mirror left-right: the last axis of a tensor, axis 1 of an ``(H, W[, C])`` array."""
    if isinstance(img, Tensor):
        return img.flip(-1)
    array = _as_image_array(img)
    if array is None:
        raise TypeError(f"img should be a tensor, an ndarray or a PIL Image. Got {type(img)}")
    return np.ascontiguousarray(array[:, ::-1])


class RandomHorizontalFlip:
    """Mirror the image left-right with probability ``p``.

    Draws one number with ``glasstorch.rand(1)`` per call.

    Args:
        p: probability of flipping.
    """

    def __init__(self, p: float = 0.5):
        self.p = p

    def __call__(self, img: Any) -> Any:
        if glasstorch.rand(1).item() < self.p:
            return _hflip(img)
        return img

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


def _size_pair(size: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return int(size[0]), int(size[0])
    if isinstance(size, Sequence) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise ValueError("Please provide only two dimensions (h, w) for size.")


def _padding_ltrb(padding: int | Sequence[int]) -> tuple[int, int, int, int]:
    """torchvision's padding forms as (left, top, right, bottom)."""
    if isinstance(padding, numbers.Number):
        p = int(padding)
        return p, p, p, p
    padding = [int(p) for p in padding]
    if len(padding) == 1:
        return padding[0], padding[0], padding[0], padding[0]
    if len(padding) == 2:
        return padding[0], padding[1], padding[0], padding[1]
    if len(padding) == 4:
        return padding[0], padding[1], padding[2], padding[3]
    raise ValueError(
        f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple"
    )


_NUMPY_PAD_MODES = {"constant", "edge", "reflect", "symmetric"}


def _pad(img: Any, padding, fill, padding_mode: str) -> Any:
    left, top, right, bottom = _padding_ltrb(padding)
    if isinstance(img, Tensor):
        # NumPy pads on the host: a CUDA image makes a round trip and comes back to its device.
        array, is_tensor = img.detach().cpu().numpy(), True
        widths = [(0, 0)] * (array.ndim - 2) + [(top, bottom), (left, right)]
    else:
        array, is_tensor = _as_image_array(img), False
        if array is None:
            raise TypeError(f"img should be a tensor, an ndarray or a PIL Image. Got {type(img)}")
        widths = [(top, bottom), (left, right)] + [(0, 0)] * (array.ndim - 2)
    if padding_mode == "constant":
        out = np.pad(array, widths, mode="constant", constant_values=fill)
    else:
        out = np.pad(array, widths, mode=padding_mode)
    if is_tensor:
        return glasstorch.from_numpy(np.ascontiguousarray(out)).to(img.device)
    return out


def _height_width(img: Any) -> tuple[int, int]:
    if isinstance(img, Tensor):
        return img.shape[-2], img.shape[-1]
    array = _as_image_array(img)
    if array is None:
        raise TypeError(f"img should be a tensor, an ndarray or a PIL Image. Got {type(img)}")
    return array.shape[0], array.shape[1]


def _crop(img: Any, top: int, left: int, height: int, width: int) -> Any:
    if isinstance(img, Tensor):
        return img[..., top : top + height, left : left + width]
    return np.ascontiguousarray(_as_image_array(img)[top : top + height, left : left + width])


class RandomCrop:
    """Crop a random ``size`` window, after optional padding.

    Args:
        size: ``(h, w)`` of the crop, or an int for a square.
        padding: pad first: an int (all sides), ``(left/right, top/bottom)`` or
            ``(left, top, right, bottom)``.
        pad_if_needed: pad an image smaller than ``size`` up to it.
        fill: the value padding uses when ``padding_mode="constant"``.
        padding_mode: ``"constant"``, ``"edge"``, ``"reflect"`` or ``"symmetric"``
            (NumPy's ``np.pad`` modes of those names).

    The window's top-left corner is drawn with two calls to ``glasstorch.randint``
    (row, then column), as torchvision does.
    """

    def __init__(
        self,
        size: int | Sequence[int],
        padding: int | Sequence[int] | None = None,
        pad_if_needed: bool = False,
        fill: float = 0,
        padding_mode: str = "constant",
    ):
        self.size = _size_pair(size)
        if padding is not None:
            _padding_ltrb(padding)  # validate now, not at the first call
        if padding_mode not in _NUMPY_PAD_MODES:
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    @staticmethod
    def get_params(img: Any, output_size: tuple[int, int]) -> tuple[int, int, int, int]:
        """Draw ``(top, left, height, width)`` of a random crop of ``output_size``."""
        h, w = _height_width(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(
                f"Required crop size {(th, tw)} is larger than input image size {(h, w)}"
            )
        if w == tw and h == th:
            return 0, 0, h, w
        top = int(glasstorch.randint(0, h - th + 1, size=(1,)).item())
        left = int(glasstorch.randint(0, w - tw + 1, size=(1,)).item())
        return top, left, th, tw

    def __call__(self, img: Any) -> Any:
        if self.padding is not None:
            img = _pad(img, self.padding, self.fill, self.padding_mode)
        height, width = _height_width(img)
        if self.pad_if_needed and width < self.size[1]:
            img = _pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = _pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        top, left, h, w = self.get_params(img, self.size)
        return _crop(img, top, left, h, w)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, padding={self.padding})"


class Lambda:
    """Apply a user function as a transform.

    Args:
        lambd: any callable taking the image.
    """

    def __init__(self, lambd: Callable):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {repr(type(lambd).__name__)}")
        self.lambd = lambd

    def __call__(self, img: Any) -> Any:
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
