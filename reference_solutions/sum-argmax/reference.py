"""Row sums and row argmax in one pass (GPU MODE format).

Outputs: (sums, indices). sums has the input's dtype (accumulated in float32,
like torch.sum); indices are int64 and, on ties, the FIRST maximal index wins,
as torch.argmax documents. Rows may contain -inf (masked logits), and a row
may be entirely -inf: its sum is -inf and its argmax is 0.

`values = "ties"` draws small integers, so every row has many tied maxima and
sums are exact; `values = "randn"` draws normal values.
"""

import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# Per sum dtype: (rtol on |sum|, factor on sum(|x|) for the summation order).
SUM_TOLERANCES = {
    torch.float32: (1e-6, 1e-6),
    torch.float16: (1e-3, 1e-6),
}


def generate_input(
    n: int, d: int, dtype: str, values: str, scale: float, neg_inf_frac: float, seed: int
) -> tuple[torch.Tensor]:
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    if values == "ties":
        x = torch.randint(-3, 4, (n, d), device=DEVICE, generator=gen).float() * scale
    else:
        x = torch.randn(n, d, device=DEVICE, generator=gen) * scale
    if neg_inf_frac > 0.0:
        masked = torch.rand(n, d, device=DEVICE, generator=gen) < neg_inf_frac
        masked[torch.randint(0, n, (1,), device=DEVICE, generator=gen)] = True
        x = x.masked_fill(masked, float("-inf"))
    return (x.to(getattr(torch, dtype)),)


def ref_kernel(data: tuple[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    (x,) = data
    return x.sum(dim=-1), x.argmax(dim=-1)


def _check_types(x: torch.Tensor, output: object) -> str:
    if not isinstance(output, tuple | list) or len(output) != 2:
        return "expected a tuple (sums, indices)"
    sums, idx = output
    expected = ((sums, x.dtype, "sums"), (idx, torch.int64, "indices"))
    for tensor, dtype, name in expected:
        if type(tensor) is not torch.Tensor:
            return f"{name}: expected a torch.Tensor, got {type(tensor).__name__}"
        if tensor.dtype != dtype or tensor.shape != x.shape[:-1] or tensor.device != x.device:
            return (
                f"{name}: expected {dtype} {tuple(x.shape[:-1])} on {x.device}, "
                f"got {tensor.dtype} {tuple(tensor.shape)} on {tensor.device}"
            )
    return ""


def _check_sums(x: torch.Tensor, sums: torch.Tensor) -> str:
    x64 = x.double()
    exact = x64.sum(dim=-1)
    got = sums.double()
    infinite = torch.isinf(exact)
    if not torch.equal(got[infinite], exact[infinite]):
        return "sums: rows containing -inf must sum to -inf"
    if not torch.isfinite(got[~infinite]).all():
        return "sums: non-finite sum for a finite row"
    rtol, order = SUM_TOLERANCES[x.dtype]
    magnitude = x64.abs().nan_to_num(posinf=0.0).sum(dim=-1)
    limit = 1e-6 + rtol * exact.abs() + order * magnitude
    err = (got - exact).abs()
    bad = ~infinite & (err > limit)
    if bad.any():
        row = int(torch.argmax(torch.where(bad, err / limit, 0.0)))
        return (
            f"sums: {int(bad.sum())} rows out of tolerance; row {row}: "
            f"got {got[row].item():.9g}, expected {exact[row].item():.9g}"
        )
    return ""


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    (x,) = data
    message = _check_types(x, output)
    if message:
        return False, message
    sums, idx = output  # type: ignore[misc]
    message = _check_sums(x, sums)
    if message:
        return False, message
    # torch.argmax returns the first maximal index; order is preserved by float32.
    expected_idx = torch.argmax(x.float(), dim=-1)
    wrong = idx != expected_idx
    if wrong.any():
        row = int(torch.nonzero(wrong)[0])
        return False, (
            f"indices: {int(wrong.sum())} rows differ; row {row}: "
            f"got {int(idx[row])}, expected {int(expected_idx[row])} (first maximal index)"
        )
    return True, ""
