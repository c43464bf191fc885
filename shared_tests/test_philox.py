"""The Philox 4x32-10 generator and the reference tier's random kernels.

These tests call the reference functions directly: they pin down the bits every
tier must reproduce (known-answer vectors, the word/block layout of each
kernel), then check the statistics of what the kernels produce. On ``--device=cuda`` the
kernel tests run the CUDA tier's random kernels
(:func:`kernel_views.kernels_under_test`): they must give the same bits.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from kernel_views import kernels_under_test

from glasstorch._kernels import Strided
from glasstorch.reference.random import (
    RandomKernels,
    block_to_counter,
    blocks_needed,
    float32_below,
    philox4x32_10,
    random_block,
    random_uint64s,
    random_words,
    seed_to_key,
)

pytestmark = pytest.mark.random

KERNELS = kernels_under_test(RandomKernels())
SEED = 0x1234_5678_9ABC_DEF0


def contiguous(n: int, dtype: str) -> Strided:
    """A fresh 1-D contiguous view of ``n`` elements."""
    return Strided(np.zeros(n, dtype=dtype), (n,), (1,), 0)


def draw(kernel: str, n: int, dtype: str, *args, seed: int = SEED, offset: int = 0) -> np.ndarray:
    """Run a random kernel into a new 1-D tensor and return its values."""
    out = contiguous(n, dtype)
    getattr(KERNELS, kernel)(out, seed, offset, *args)
    return out.buffer


# ------------------------------------------------------------ known answers

# Random123's published known-answer vectors for philox4x32 with 10 rounds:
# (counter words, key words) -> output words.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
        (0xFFFFFFFF, 0xFFFFFFFF),
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),  # digits of pi
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize(("counter", "key", "expected"), KNOWN_ANSWERS)
def test_philox_known_answers(counter, key, expected):
    assert philox4x32_10(counter, key) == expected


def test_seed_splits_into_key_low_word_first():
    assert seed_to_key(0x1111_2222_3333_4444) == (0x3333_4444, 0x1111_2222)
    assert seed_to_key(7) == (7, 0)


def test_negative_seed_is_its_64_bit_twos_complement(device):
    assert seed_to_key(-1) == (0xFFFFFFFF, 0xFFFFFFFF)
    assert (
        draw("random_uniform", 8, "float64", 0.0, 1.0, seed=-5).tolist()
        == draw("random_uniform", 8, "float64", 0.0, 1.0, seed=2**64 - 5).tolist()
    )


def test_block_number_splits_into_counter_low_word_first():
    block = (4 << 96) | (3 << 64) | (2 << 32) | 1
    assert block_to_counter(block) == (1, 2, 3, 4)
    assert block_to_counter(5) == (5, 0, 0, 0)


def test_random_block_is_philox_of_block_under_seed():
    assert random_block(0, 0) == KNOWN_ANSWERS[0][2]
    assert random_block(SEED, 9) == philox4x32_10((9, 0, 0, 0), seed_to_key(SEED))


def test_blocks_needed_rounds_up():
    assert [blocks_needed(n, 4) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]
    assert [blocks_needed(n, 2) for n in (0, 1, 2, 3)] == [0, 1, 1, 2]


# ------------------------------------------------- the layout every tier shares


def test_words_come_four_per_block_in_order():
    words = list(random_words(SEED, 3, 10))
    expected = [*random_block(SEED, 3), *random_block(SEED, 4), *random_block(SEED, 5)[:2]]
    assert words == expected


def test_uint64s_join_word_pairs_low_half_first():
    w0, w1, w2, w3 = random_block(SEED, 7)
    assert list(random_uint64s(SEED, 7, 2)) == [w0 + (w1 << 32), w2 + (w3 << 32)]


def test_uniform_float64_uses_word_i_mod_4_of_block_i_div_4(device):
    values = draw("random_uniform", 9, "float64", -1.0, 3.0, offset=5)
    for i, value in enumerate(values):
        word = random_block(SEED, 5 + i // 4)[i % 4]
        assert value == -1.0 + word * 2.0**-32 * 4.0


def test_uniform_float32_keeps_the_top_24_bits(device):
    values = draw("random_uniform", 9, "float32", 0.0, 1.0, offset=5)
    for i, value in enumerate(values):
        word = random_block(SEED, 5 + i // 4)[i % 4]
        assert value == (word >> 8) * 2.0**-24


def test_normal_uses_words_0_and_1_of_one_block_per_pair(device):
    values = draw("random_normal", 5, "float64", 1.5, 2.0, offset=2)
    for k in range(3):
        x0, x1, _, _ = random_block(SEED, 2 + k)
        r = math.sqrt(-2.0 * math.log((x0 + 1) * 2.0**-32))
        angle = 2.0 * math.pi * x1 * 2.0**-32
        pair = [1.5 + 2.0 * r * math.cos(angle), 1.5 + 2.0 * r * math.sin(angle)]
        assert values[2 * k : 2 * k + 2].tolist() == pair[: len(values[2 * k : 2 * k + 2])]


def test_integers_use_two_words_per_element(device):
    values = draw("random_integers", 5, "int64", -10, 1000, offset=4)
    for i, value in enumerate(values):
        words = random_block(SEED, 4 + i // 2)
        x = words[2 * (i % 2)] + (words[2 * (i % 2) + 1] << 32)
        assert value == -10 + x % 1010


def test_randperm_is_fisher_yates_with_integer_draws(device):
    n = 9
    expected = list(range(n))
    draws = list(random_uint64s(SEED, 3, n - 1))
    for k, i in enumerate(range(n - 1, 0, -1)):
        j = draws[k] % (i + 1)
        expected[i], expected[j] = expected[j], expected[i]
    assert draw("randperm", n, "int64", offset=3).tolist() == expected


@pytest.mark.parametrize(
    ("kernel", "dtype", "args", "per_block"),
    [
        ("random_uniform", "float32", (0.0, 1.0), 4),
        ("random_uniform", "float64", (0.0, 1.0), 4),
        ("random_normal", "float64", (0.0, 1.0), 2),
        ("random_integers", "int64", (0, 2**40), 2),
    ],
)
def test_offset_counts_blocks(kernel, dtype, args, per_block, device):
    # Starting one block later is the same stream without its first block.
    whole = draw(kernel, 12, dtype, *args, offset=10)
    later = draw(kernel, 12 - per_block, dtype, *args, offset=11)
    assert later.tolist() == whole[per_block:].tolist()


# ----------------------------------------------------------- determinism


@pytest.mark.parametrize(
    ("kernel", "dtype", "args"),
    [
        ("random_uniform", "float32", (0.0, 1.0)),
        ("random_normal", "float32", (0.0, 1.0)),
        ("random_integers", "int64", (0, 1000)),
        ("randperm", "int64", ()),
    ],
)
def test_same_seed_and_offset_same_numbers_else_different(kernel, dtype, args, device):
    first = draw(kernel, 64, dtype, *args, offset=3)
    again = draw(kernel, 64, dtype, *args, offset=3)
    other_offset = draw(kernel, 64, dtype, *args, offset=200)
    other_seed = draw(kernel, 64, dtype, *args, seed=SEED + 1, offset=3)
    assert first.tolist() == again.tolist()
    assert first.tolist() != other_offset.tolist()
    assert first.tolist() != other_seed.tolist()


# ----------------------------------------------------------- uniform


def test_uniform_float32_range_dtype_and_mean(device):
    values = draw("random_uniform", 20_000, "float32", 0.0, 1.0)
    assert values.dtype == np.float32
    assert values.min() >= 0.0
    assert values.max() < 1.0
    assert abs(values.mean() - 0.5) < 0.02
    assert abs(values.var() - 1 / 12) < 0.01


def test_uniform_float64_shifted_range_and_mean(device):
    values = draw("random_uniform", 20_000, "float64", -3.0, 5.0)
    assert values.dtype == np.float64
    assert values.min() >= -3.0
    assert values.max() < 5.0
    assert abs(values.mean() - 1.0) < 0.15


@pytest.mark.parametrize(
    ("dtype", "step"),
    [("float32", 2.0**-23), ("float64", 2.0**-52)],
)
def test_uniform_never_rounds_up_to_high(dtype, step, device):
    # Only two numbers of the dtype lie in [low, high): low and low + step.
    # Without care, about a quarter of the values would round up onto high.
    low, high = 1.0, 1.0 + 2 * step
    values = draw("random_uniform", 400, dtype, low, high)
    assert set(values.tolist()) == {low, low + step}


def test_uniform_with_low_equal_high_gives_low(device):
    assert set(draw("random_uniform", 16, "float32", 2.5, 2.5).tolist()) == {2.5}


@pytest.mark.parametrize("value", [1.0, 2.0, 0.1, -1.0, -0.1, 0.0, 1e-40, 1e39, math.inf])
def test_float32_below_is_the_next_float32_down(value):
    below = float32_below(value)
    assert below < value
    assert below == float(np.float32(below))
    with np.errstate(over="ignore"):  # the float32 after the largest one is inf
        assert np.nextafter(np.float32(below), np.float32(np.inf)) >= value


# ----------------------------------------------------------- normal


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_mean_and_std(dtype, device):
    values = draw("random_normal", 20_001, dtype, 2.0, 3.0)  # odd: last pair half used
    assert values.dtype == np.dtype(dtype)
    assert np.isfinite(values).all()
    assert abs(values.mean() - 2.0) < 0.15  # standard error is 3 / sqrt(20001), about 0.02
    assert abs(values.std() - 3.0) < 0.15
    # About 68% of a normal sample lies within one standard deviation.
    assert 0.65 < np.mean(np.abs(values - 2.0) < 3.0) < 0.71


# ----------------------------------------------------------- integers


def test_integers_stay_in_range_and_cover_it(device):
    values = draw("random_integers", 5_000, "int64", -3, 7)
    assert values.dtype == np.int64
    assert set(values.tolist()) == set(range(-3, 7))


def test_integers_reach_beyond_32_bits(device):
    values = draw("random_integers", 1_000, "int64", 0, 2**62)
    assert values.min() >= 0
    assert values.max() >= 2**61  # half of them, were they uniform


def test_integers_into_an_int32_tensor(device):
    values = draw("random_integers", 1_000, "int32", -100, 100)
    assert values.dtype == np.int32
    assert values.min() >= -100
    assert values.max() < 100


# ----------------------------------------------------------- randperm


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000])
def test_randperm_is_a_permutation(n, device):
    values = draw("randperm", n, "int64")
    assert sorted(values.tolist()) == list(range(n))


def test_randperm_moves_things(device):
    assert draw("randperm", 50, "int64").tolist() != list(range(50))


# ----------------------------------------------------------- layouts


@pytest.mark.parametrize(
    ("kernel", "dtype", "args"),
    [
        ("random_uniform", "float32", (0.0, 1.0)),
        ("random_normal", "float64", (0.0, 1.0)),
        ("random_integers", "int64", (0, 100)),
    ],
)
def test_non_contiguous_out_gets_row_major_values(kernel, dtype, args, device):
    # A (3, 4) view, transposed (column-major strides), starting at position 5
    # of a larger buffer whose other elements must stay untouched.
    sentinel = -7
    buffer = np.full(30, sentinel, dtype=dtype)
    view = Strided(buffer, (3, 4), (1, 3), 5)
    getattr(KERNELS, kernel)(view, SEED, 2, *args)

    expected = draw(kernel, 12, dtype, *args, offset=2)
    for row in range(3):
        for col in range(4):
            assert buffer[5 + row * 1 + col * 3] == expected[row * 4 + col]
    written = {5 + row + col * 3 for row in range(3) for col in range(4)}
    untouched = [buffer[p] for p in range(30) if p not in written]
    assert all(value == sentinel for value in untouched)


def test_randperm_into_a_strided_view(device):
    buffer = np.full(20, -1, dtype="int64")
    KERNELS.randperm(Strided(buffer, (10,), (2,), 0), SEED, 0)
    assert buffer[0::2].tolist() == draw("randperm", 10, "int64").tolist()
    assert (buffer[1::2] == -1).all()


def test_zero_dim_and_empty_outputs(device):
    scalar = Strided(np.zeros(1, dtype="float32"), (), (), 0)
    KERNELS.random_uniform(scalar, SEED, 0, 0.0, 1.0)
    assert scalar.buffer[0] == draw("random_uniform", 1, "float32", 0.0, 1.0)[0]

    empty = Strided(np.zeros(0, dtype="float64"), (0, 3), (3, 1), 0)
    KERNELS.random_normal(empty, SEED, 0, 0.0, 1.0)  # draws nothing, writes nothing
