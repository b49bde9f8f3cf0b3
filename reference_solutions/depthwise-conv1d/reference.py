"""Reference: depthwise 1D convolution with bias and symmetric zero padding.

Each channel is convolved with its own K-tap filter (groups = channels), as in
the token-mixing convolutions of Mamba/Hyena-style blocks and ConvNeXt-1D.
"""

import torch
import torch.nn as nn

batch = 16
channels = 1536
length = 4099
kernel_size = 4
padding = 3
dtype = "bfloat16"

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

# fp32 means fp32: cuDNN may otherwise pick TF32 kernels for an fp32 convolution.
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self, channels: int, kernel_size: int, padding: int, dtype: str) -> None:
        super().__init__()
        self.conv = nn.Conv1d(
            channels,
            channels,
            kernel_size,
            padding=padding,
            groups=channels,
            bias=True,
            dtype=getattr(torch, dtype),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs() -> list[torch.Tensor]:
    # Drawn on the device: the harness seeds every device's generator.
    x = torch.randn(batch, channels, length, device=DEVICE)
    return [x.to(getattr(torch, dtype))]


def get_init_inputs() -> list:
    return [channels, kernel_size, padding, dtype]
