import torch


def step(x, lengths):
    batch, time, _ = x.shape
    positions = torch.arange(time).expand(batch, time)
    weights = (positions < lengths[:, None]).to(x.dtype) / lengths[:, None].to(x.dtype)
    return torch.einsum("bt,btf->bf", weights, x)
