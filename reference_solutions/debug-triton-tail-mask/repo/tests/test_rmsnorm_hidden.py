import ctypes
import mmap

import torch

from rmsnorm import rms_norm

SENTINEL = -7.25


def _inputs(seed, rows, cols, dtype=torch.float32):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=generator).to(dtype)
    weight = (1.0 + 0.1 * torch.randn(cols, generator=generator)).to(dtype)
    return x, weight


def _guarded(rows, cols, dtype, band=48):
    """An output with sentinel guard bands on both sides; returned whole, so a write
    past either end shows as a changed sentinel."""
    buffer = torch.full((band + rows * cols + band,), SENTINEL, dtype=dtype)
    return buffer, buffer[band : band + rows * cols].view(rows, cols)


def _ending_at_a_guard_page(rows, cols, dtype):
    """An output whose last element ends where a page no one may touch begins: a
    store past the output faults, whatever the code around the kernel puts back."""
    itemsize = torch.empty(0, dtype=dtype).element_size()
    page = mmap.PAGESIZE
    pages = -(-rows * cols * itemsize // page)
    region = mmap.mmap(-1, (pages + 1) * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(region))
    libc = ctypes.CDLL(None, use_errno=True)
    guard = ctypes.c_void_p(base + pages * page)
    if libc.mprotect(guard, ctypes.c_size_t(page), 0) != 0:  # PROT_NONE
        raise OSError(ctypes.get_errno(), "mprotect of the guard page failed")
    usable = torch.frombuffer(region, dtype=dtype, count=pages * page // itemsize)
    usable.fill_(SENTINEL)
    return region, usable[-rows * cols :].view(rows, cols)


def test_output_ending_at_a_guard_page(seed):
    x, weight = _inputs(seed, 3, 29)
    region, out = _ending_at_a_guard_page(3, 29, torch.float32)
    rms_norm(x, weight, out=out)
    result = out.clone()
    del out
    return result


def test_ragged_width_guarded(seed):
    x, weight = _inputs(seed, 5, 37)
    buffer, out = _guarded(5, 37, torch.float32)
    rms_norm(x, weight, out=out)
    return buffer


def test_single_column_guarded(seed):
    x, weight = _inputs(seed, 3, 1)
    buffer, out = _guarded(3, 1, torch.float32)
    rms_norm(x, weight, out=out)
    return buffer


def test_column_slice_of_wider_buffer(seed):
    # The output is the first 20 columns of a 6 x 32 buffer: the other columns of
    # every row must keep their values.
    x, weight = _inputs(seed, 6, 20)
    wide = torch.full((6, 32), SENTINEL)
    rms_norm(x, weight, out=wide[:, :20])
    return wide


def test_float16_guarded(seed):
    x, weight = _inputs(seed, 4, 45, torch.float16)
    buffer, out = _guarded(4, 45, torch.float16)
    rms_norm(x, weight, out=out)
    return buffer


def test_power_of_two_guarded(seed):
    x, weight = _inputs(seed, 4, 32)
    buffer, out = _guarded(4, 32, torch.float32)
    rms_norm(x, weight, out=out)
    return buffer


def test_power_of_two_float16(seed):
    x, weight = _inputs(seed, 3, 16, torch.float16)
    return rms_norm(x, weight, eps=1e-5)
