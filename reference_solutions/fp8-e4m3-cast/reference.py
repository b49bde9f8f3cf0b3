"""Reference: delayed-scaling cast to float8_e4m3fn (GPU MODE format).

As in FP8 training recipes with delayed scaling: the scale comes from the
amax history of earlier steps, values beyond the representable range saturate
to +-448, and the cast also records this tensor's amax for the next step.
"""

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
FP8_MAX = 448.0
FP8 = torch.float8_e4m3fn
WINDOW = 1e-6  # relative distance to an fp8 rounding midpoint where either neighbour passes


def _fp8_midpoints(gen: torch.Generator, shape: tuple[int, int]) -> torch.Tensor:
    """Random exact midpoints between adjacent finite e4m3 values (exact ties at scale 1)."""
    codes = torch.arange(0, 0x7F, dtype=torch.int32).to(torch.uint8)
    grid = codes.view(FP8).float()  # 0 .. 448, ascending
    mids = ((grid[1:] + grid[:-1]) / 2).to(DEVICE)
    pick = torch.randint(0, mids.numel(), shape, generator=gen, device=DEVICE)
    sign = torch.where(torch.rand(shape, generator=gen, device=DEVICE) < 0.5, -1.0, 1.0)
    return mids[pick] * sign


def generate_input(
    rows: int, cols: int, dtype: str, history: int, pattern: str, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, amax_history). Patterns:

    - "in-range": the history max exceeds the current amax; nothing saturates.
    - "saturating": the history max is 20-50% of the current amax; many values clamp.
    - "zero-history": first step, the history is all zero so the scale is 1;
      x spans subnormals to far beyond 448.
    - "negative": all values negative (amax must be taken of |x|).
    - "ties": x are exact midpoints between e4m3 values and the history max is
      448, so the scale is exactly 1 and every value is a rounding tie.
    """
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    shape = (rows, cols)
    if pattern == "ties":
        x = _fp8_midpoints(gen, shape)
    elif pattern == "zero-history":
        x = torch.randn(shape, generator=gen, device=DEVICE) * 300.0
    else:
        x = torch.randn(shape, generator=gen, device=DEVICE) * 3.0
        if pattern == "negative":
            x = -x.abs()
    x = x.to(getattr(torch, dtype)).contiguous()
    current = x.float().abs().max()
    factors = torch.rand(history, generator=gen, device=DEVICE)
    if pattern in ("in-range", "negative"):
        amax_history = current * (0.5 + factors)
        amax_history[0] = current * 1.25  # the max is above the current amax
    elif pattern == "saturating":
        amax_history = current * (0.2 + 0.3 * factors)
    elif pattern == "ties":
        amax_history = FP8_MAX * factors
        amax_history[0] = FP8_MAX
    elif pattern == "zero-history":
        amax_history = torch.zeros(history, device=DEVICE)
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    return x, amax_history.float().contiguous()


def _scale(amax_history: torch.Tensor) -> torch.Tensor:
    prev = amax_history.max()
    return torch.where(prev > 0, FP8_MAX / prev, torch.ones_like(prev))


def ref_kernel(
    data: tuple[torch.Tensor, torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x, amax_history = data
    scale = _scale(amax_history)
    y = (x.float() * scale).clamp(-FP8_MAX, FP8_MAX).to(FP8)
    amax = x.float().abs().max().reshape(1)
    return y, amax, (1.0 / scale).reshape(1)


def _check_structure(x: torch.Tensor, output: object) -> str:
    if not isinstance(output, tuple | list) or len(output) != 3:
        return "output must be a tuple (y, amax, scale_inv)"
    y, amax, scale_inv = output
    if any(type(t) is not torch.Tensor for t in output):
        return "outputs must be plain torch.Tensor objects"
    if y.dtype != FP8 or y.shape != x.shape:
        return f"y must be float8_e4m3fn of shape {tuple(x.shape)}, got {y.dtype} {tuple(y.shape)}"
    for name, t in (("amax", amax), ("scale_inv", scale_inv)):
        if t.dtype != torch.float32 or tuple(t.shape) != (1,):
            return f"{name} must be float32 of shape (1,), got {t.dtype} {tuple(t.shape)}"
    if any(t.device != x.device for t in output):
        return "outputs must be on the input's device"
    return ""


def _check_values(data: tuple[torch.Tensor, torch.Tensor], y: torch.Tensor) -> str:
    """y must be the nearest e4m3 value (ties to even) of clamp(x * scale).

    Only where the exact product lies within WINDOW of a rounding midpoint (and
    not exactly on it) may the other neighbour be chosen: a scale one ulp off,
    or a different fp32 rounding of the product, moves such values across.
    """
    x, amax_history = data
    ref_y = ref_kernel(data)[0].float().double()
    got = y.float().double()
    exact = (x.double() * _scale(amax_history).double()).clamp(-FP8_MAX, FP8_MAX)
    d_got = (got - exact).abs()
    d_ref = (ref_y - exact).abs()
    near_mid = (d_got - d_ref).abs() <= WINDOW * exact.abs()
    exact_tie = d_got == d_ref
    ok = (got == ref_y) | (near_mid & ~exact_tie & (d_got <= 0.5 * (got - ref_y).abs() * 1.01))
    ok &= ~got.isnan()
    if bool(ok.all()):
        return ""
    idx = tuple(int(i) for i in (~ok).nonzero()[0])
    return (
        f"{int((~ok).sum())} fp8 values wrong; first at {idx}: got {float(got[idx])}, "
        f"expected {float(ref_y[idx])} (x * scale = {float(exact[idx])})"
    )


def check_implementation(
    data: tuple[torch.Tensor, torch.Tensor], output: object
) -> tuple[bool, str]:
    x, _ = data
    problem = _check_structure(x, output)
    if problem:
        return False, problem
    y, amax, scale_inv = output  # type: ignore[misc]
    _, ref_amax, ref_scale_inv = ref_kernel(data)
    if not torch.equal(amax, ref_amax):
        return False, f"amax {float(amax)} != max|x| {float(ref_amax)}"
    if not torch.allclose(scale_inv, ref_scale_inv, rtol=1e-6, atol=0.0):
        return False, f"scale_inv {float(scale_inv)} != {float(ref_scale_inv)}"
    problem = _check_values(data, y)
    return (not problem), problem
