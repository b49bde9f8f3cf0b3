"""Reference: per-row symmetric int8 quantization (GPU MODE format).

scale[r] = max_c |x[r, c]| / 127 (fp32), q = clamp(round(x / scale), -127, 127)
with torch.round's half-to-even rule; an all-zero row gets scale 0 and q 0.
"""

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TIE_WINDOW = 1e-4  # quotients this close to a half-integer may round either way


def generate_input(rows: int, cols: int, dtype: str, pattern: str, seed: int) -> torch.Tensor:
    """x of shape (rows, cols). Patterns:

    - "normal": N(0, 1).
    - "outliers": N(0, 1) with a few entries per row scaled by 100, like LLM activations.
    - "ties": integers + 0.5 with one +-127 per row, so scale is exactly 1 and
      every other quotient is an exact tie.
    - "zero-rows": N(0, 1) with every third row all zero.
    """
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen, device=DEVICE)
    if pattern == "outliers":
        hit = torch.rand(rows, cols, generator=gen, device=DEVICE) < 0.002
        x = torch.where(hit, x * 100.0, x)
    elif pattern == "ties":
        k = torch.randint(-126, 126, (rows, cols), generator=gen, device=DEVICE)
        x = k.float() + 0.5
        pos = torch.randint(0, cols, (rows,), generator=gen, device=DEVICE)
        sign = torch.where(torch.rand(rows, generator=gen, device=DEVICE) < 0.5, -1.0, 1.0)
        x[torch.arange(rows, device=DEVICE), pos] = 127.0 * sign
    elif pattern == "zero-rows":
        x[::3] = 0.0
    elif pattern != "normal":
        raise ValueError(f"unknown pattern {pattern!r}")
    return x.to(getattr(torch, dtype)).contiguous()


def ref_kernel(data: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    xf = data.float()
    scale = xf.abs().amax(dim=1) / 127.0
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round(xf / safe[:, None]).clamp(-127, 127).to(torch.int8)
    return q, scale


def _check_structure(data: torch.Tensor, output: object) -> str:
    if not isinstance(output, tuple | list) or len(output) != 2:
        return "output must be a tuple (q, scale)"
    q, scale = output
    rows, cols = data.shape
    if type(q) is not torch.Tensor or type(scale) is not torch.Tensor:
        return "q and scale must be plain torch.Tensor objects"
    if q.dtype != torch.int8 or tuple(q.shape) != (rows, cols):
        return f"q must be int8 of shape {(rows, cols)}, got {q.dtype} {tuple(q.shape)}"
    if scale.dtype != torch.float32 or tuple(scale.shape) != (rows,):
        return f"scale must be float32 of shape {(rows,)}, got {scale.dtype} {tuple(scale.shape)}"
    if q.device != data.device or scale.device != data.device:
        return "outputs must be on the input's device"
    return ""


def check_implementation(data: torch.Tensor, output: object) -> tuple[bool, str]:
    problem = _check_structure(data, output)
    if problem:
        return False, problem
    q, scale = output  # type: ignore[misc]
    ref_q, ref_scale = ref_kernel(data)
    if not torch.allclose(scale, ref_scale, rtol=1e-6, atol=0.0):
        bad = int((~torch.isclose(scale, ref_scale, rtol=1e-6, atol=0.0)).sum())
        return False, f"scale differs from absmax/127 in {bad} rows"
    # Judge q against the exact quotient (fp64): an exact tie must round to
    # even, but a quotient within TIE_WINDOW of a tie may round either way,
    # since x/scale and x*(127/absmax) differ in the last fp32 bit.
    safe = torch.where(ref_scale > 0, ref_scale, torch.ones_like(ref_scale)).double()
    t = data.double() / safe[:, None]
    dist_to_tie = (t - torch.floor(t) - 0.5).abs()
    either = (dist_to_tie > 0) & (dist_to_tie < TIE_WINDOW)
    qd = q.double()
    ok = (qd == ref_q.double()) | (either & ((qd == torch.floor(t)) | (qd == torch.ceil(t))))
    if not bool(ok.all()):
        n_bad = int((~ok).sum())
        idx = tuple(int(i) for i in (~ok).nonzero()[0])
        return False, (
            f"{n_bad} quantized values wrong; first at {idx}: got {int(q[idx])}, "
            f"expected {int(ref_q[idx])} (x/scale = {float(t[idx]):.6f})"
        )
    return True, ""
