"""Variants of the papers' architectures, as ``"nadcore.nets.variants:factory"`` model specs:
LeNet-sized networks that downsample in different ways, a narrow residual network with and
without its skip connections (chapter 6: the reviewers' questions about all-convolutional nets
and skip connections), and the follow-up's wider MLP for binary CIFAR-10 (chapter 5).

The NAD paper (Ortiz-Jimenez et al., NeurIPS 2020, Sec. 2.1) traces the directional bias of CNNs
to pooling: subsampling folds frequencies onto each other (aliasing), and the prefilter in front
of it decides which frequencies survive. Four ways to halve a feature map, all with LeNet's layer
sizes (conv5 -> 28x28 -> 14x14, conv5 -> 10x10 -> 5x5, then 400-120-84-out):

* ``"lenet"`` (the registry model): 2x2 max-pooling;
* :func:`lenet_avgpool`: 2x2 average pooling (the linear pooling layer of the paper's theory);
* :func:`lenet_strided`: no pooling, the convolutions themselves take stride 2 (the "all
  convolutional" way: subsampling with a learned prefilter and nothing else);
* :func:`lenet_blurpool`: anti-aliased downsampling, blur then subsample (Zhang, ICML 2019): a
  fixed binomial low-pass filter ``[1, 2, 1]^T [1, 2, 1] / 16`` applied with stride 2 (reflect
  padding), so that the subsampling sees a nearly band-limited signal. It differs from average
  pooling (the box filter ``[1, 1]^T [1, 1] / 4``, then stride 2) only in the prefilter.

Every parameter of these models follows PyTorch's default initialisation (``default_init =
True``): :func:`nadcore.nets.build_model` draws them from a seed, and NAD sampling stacks
many networks at once. The blur kernel is a constant of the forward pass, not a parameter or a
registered buffer (so :func:`nadcore.nets.init.init_plan` still describes the model).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from nadcore.nets.architectures import MLP, VGG11, DenseNet121, ResNet18

__all__ = [
    "DownsamplingLeNet",
    "blur_downsample",
    "lenet_strided",
    "lenet_avgpool",
    "lenet_blurpool",
    "ResidualNet",
    "resnet_skip",
    "resnet_noskip",
    "mlp_cifar",
    "DOWNSAMPLING",
    "VARIANTS",
    "TINY",
    "resnet18_tiny",
    "resnet18_nopool_tiny",
    "vgg11_tiny",
    "densenet121_tiny",
]

#: how each LeNet variant halves its feature maps
DOWNSAMPLING = ("max", "avg", "stride", "blur")


def blur_downsample(x: torch.Tensor, stride: int = 2) -> torch.Tensor:
    """Zhang's BlurPool: the binomial low-pass ``[1, 2, 1]^T [1, 2, 1] / 16`` on every channel
    (reflect padding 1), keeping one sample in ``stride`` along each axis."""
    k = x.new_tensor([1.0, 2.0, 1.0])
    k = (k[:, None] * k[None, :]) / 16.0
    C = x.shape[1]
    return F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), k.expand(C, 1, 3, 3), stride=stride, groups=C)


class DownsamplingLeNet(nn.Module):
    """LeNet-5 whose two downsampling steps are ``downsampling`` (one of :data:`DOWNSAMPLING`);
    ``"max"`` is the registry's LeNet layer for layer. ``lenet_layout`` lets
    :func:`nadcore.train.train_many` train many of them as grouped convolutions, like LeNet."""

    default_init = True
    lenet_layout = True

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, downsampling: str = "max"):
        super().__init__()
        if downsampling not in DOWNSAMPLING:
            raise ValueError(f"downsampling must be one of {DOWNSAMPLING}, got {downsampling!r}")
        self.downsampling = downsampling
        stride = 2 if downsampling == "stride" else 1
        self.conv1 = nn.Conv2d(in_channels, 6, 5, stride=stride)
        self.conv2 = nn.Conv2d(6, 16, 5, stride=stride)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_outputs)

    def downsample(self, x):
        """The downsampling step on (N, C, H, W) feature maps, channel by channel."""
        if self.downsampling == "max":
            return F.max_pool2d(x, 2)
        if self.downsampling == "avg":
            return F.avg_pool2d(x, 2)
        if self.downsampling == "blur":
            return blur_downsample(x)
        return x  # "stride": the convolution already subsampled

    def forward(self, x):
        out = self.downsample(F.relu(self.conv1(x)))
        out = self.downsample(F.relu(self.conv2(out)))
        out = F.relu(self.fc1(out.flatten(1)))
        out = F.relu(self.fc2(out))
        return self.fc3(out)


def lenet_strided(in_channels: int = 1, num_outputs: int = 1) -> nn.Module:
    """LeNet without pooling: both convolutions with stride 2 (same feature-map sizes)."""
    return DownsamplingLeNet(in_channels, num_outputs, "stride")


def lenet_avgpool(in_channels: int = 1, num_outputs: int = 1) -> nn.Module:
    """LeNet with 2x2 average pooling instead of max-pooling."""
    return DownsamplingLeNet(in_channels, num_outputs, "avg")


def lenet_blurpool(in_channels: int = 1, num_outputs: int = 1) -> nn.Module:
    """LeNet with anti-aliased downsampling (:func:`blur_downsample` instead of pooling)."""
    return DownsamplingLeNet(in_channels, num_outputs, "blur")


#: chapter 6's LeNet variants: label -> model spec
VARIANTS = {
    "max-pool": "lenet",
    "average pool": "nadcore.nets.variants:lenet_avgpool",
    "strided conv": "nadcore.nets.variants:lenet_strided",
    "blur-pool": "nadcore.nets.variants:lenet_blurpool",
}


class ResidualNet(nn.Module):
    """A narrow CIFAR-style residual network: a 3x3 stem, two basic blocks (the second halves the
    resolution, with a 1x1 strided projection on its shortcut), 4x4 average pooling and a linear
    layer. ``skip=False`` removes both shortcuts and nothing else. No batch norm: at
    initialisation, in eval mode, BatchNorm with its default statistics is the identity."""

    default_init = True

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, width: int = 8, skip: bool = True):
        super().__init__()
        w = width
        self.skip = skip
        self.stem = nn.Conv2d(in_channels, w, 3, padding=1)
        self.a1 = nn.Conv2d(w, w, 3, padding=1)
        self.a2 = nn.Conv2d(w, w, 3, padding=1)
        self.b1 = nn.Conv2d(w, 2 * w, 3, stride=2, padding=1)
        self.b2 = nn.Conv2d(2 * w, 2 * w, 3, padding=1)
        self.proj = nn.Conv2d(w, 2 * w, 1, stride=2) if skip else None
        self.fc = nn.Linear(2 * w * 4 * 4, num_outputs)

    def forward(self, x):
        h = F.relu(self.stem(x))
        r = self.a2(F.relu(self.a1(h)))
        h = F.relu(r + h if self.skip else r)
        r = self.b2(F.relu(self.b1(h)))
        h = F.relu(r + self.proj(h) if self.skip else r)
        return self.fc(F.avg_pool2d(h, 4).flatten(1))


def resnet_skip(in_channels: int = 1, num_outputs: int = 1) -> nn.Module:
    """:class:`ResidualNet` (width 8) with its skip connections."""
    return ResidualNet(in_channels, num_outputs, skip=True)


def resnet_noskip(in_channels: int = 1, num_outputs: int = 1) -> nn.Module:
    """:class:`ResidualNet` (width 8) without skip connections (a plain 5-layer CNN)."""
    return ResidualNet(in_channels, num_outputs, skip=False)


def mlp_cifar(in_channels: int = 1, num_outputs: int = 1) -> nn.Module:
    """The MLP of the follow-up's appendix A.2 (binary CIFAR-10 (+) D(v)): hidden layers of 200
    and 50 ReLUs. (Sec. 3's MLP, hidden 100 and 20, is the registry's ``"mlp"``.)"""
    return MLP(in_channels, num_outputs, 32, hidden=(200, 50))


# --------------------------------------------------------------------------------------------
# Tiny versions of the paper's big networks, for tests of the paper-scale machinery on a CPU
# --------------------------------------------------------------------------------------------
def resnet18_tiny(in_channels: int = 1, num_outputs: int = 1) -> nn.Module:
    """ResNet-18's layers at width 4 (the standard network has 64): for CPU tests only."""
    return ResNet18(in_channels, num_outputs, width=4)


def resnet18_nopool_tiny(in_channels: int = 1, num_outputs: int = 1) -> nn.Module:
    """:func:`resnet18_tiny` without its final average pool (Fig. 3's variant)."""
    return ResNet18(in_channels, num_outputs, width=4, pooling=False)


def vgg11_tiny(in_channels: int = 1, num_outputs: int = 1) -> nn.Module:
    """VGG-11 (batch norm, dropout) at width 4 (the standard network has 64)."""
    return VGG11(in_channels, num_outputs, width=4)


def densenet121_tiny(in_channels: int = 1, num_outputs: int = 1) -> nn.Module:
    """DenseNet-121's blocks with growth rate 2 (the standard network has 32)."""
    return DenseNet121(in_channels, num_outputs, growth_rate=2)


#: registry name -> its tiny stand-in (``scripts/run_paper.py --tiny``); LeNet-sized networks
#: are small already and stand for themselves
TINY = {
    "resnet18": "nadcore.nets.variants:resnet18_tiny",
    "resnet18_nopool": "nadcore.nets.variants:resnet18_nopool_tiny",
    "vgg11": "nadcore.nets.variants:vgg11_tiny",
    "densenet121": "nadcore.nets.variants:densenet121_tiny",
}
