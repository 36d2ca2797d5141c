"""The architectures of the NAD papers, for any number of input channels and outputs.

The CIFAR-style definitions follow the ones used by the authors' code (3x3 stems, no ImageNet
max-pool, ``F.avg_pool2d(out, 4)`` heads), with PyTorch's default initialisation (the VGG keeps
its own normal initialisation of convolutions, as the original did), drawn from explicit
generators by :mod:`nadcore.nets.init`.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["LogReg", "MLP", "LeNet", "VGG11", "ResNet18", "DenseNet121"]


class _Registered(nn.Module):
    """Registry models declare PyTorch's default initialisation for every parameter, so that
    :mod:`nadcore.nets.init` can draw them from explicit generators, many at once."""

    default_init = True


class LogReg(_Registered):
    """Logistic regression: a single affine map of the flattened input."""

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, input_size: int = 32):
        super().__init__()
        self.fc = nn.Linear(in_channels * input_size * input_size, num_outputs)

    def forward(self, x):
        return self.fc(x.flatten(1))


class MLP(_Registered):
    """Fully connected ReLU network (hidden sizes 100 and 20 in the underspecification paper)."""

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, input_size: int = 32, hidden=(100, 20)):
        super().__init__()
        dims = [in_channels * input_size * input_size, *hidden]
        layers: list[nn.Module] = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(dims[-1], num_outputs))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x.flatten(1))


class LeNet(_Registered):
    """LeNet-5 as in the original code: conv5-relu-maxpool, conv5-relu-maxpool, 3 FC layers.

    ``pooling=False`` gives the no-pooling variant of the paper's Fig. 3: the two max-pools are
    removed and the first fully connected layer widened to take the 16x24x24 feature map.
    """

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, input_size: int = 32, pooling: bool = True):
        super().__init__()
        self.pooling = pooling
        self.conv1 = nn.Conv2d(in_channels, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        s = input_size - 4
        s = s // 2 if pooling else s
        s = s - 4
        s = s // 2 if pooling else s
        self.fc1 = nn.Linear(16 * s * s, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_outputs)

    def forward(self, x):
        out = F.relu(self.conv1(x))
        if self.pooling:
            out = F.max_pool2d(out, 2)
        out = F.relu(self.conv2(out))
        if self.pooling:
            out = F.max_pool2d(out, 2)
        out = out.flatten(1)
        out = F.relu(self.fc1(out))
        out = F.relu(self.fc2(out))
        return self.fc3(out)


_VGG11_CFG = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]


class VGG11(_Registered):
    """VGG-11 with batch norm (the variant the authors used for NADs), CIFAR head (512-512-out).

    Convolutions get the original code's normal initialisation N(0, 2/(k*k*out_channels)) with
    zero bias; everything else keeps PyTorch's default. ``width`` scales every layer (64 is the
    standard network; tiny widths are for tests).
    """

    conv_init = "normal_fan_out"  # the original code's normal initialisation of convolutions

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, batch_norm: bool = True, width: int = 64):
        super().__init__()
        layers: list[nn.Module] = []
        c = in_channels
        for v in _VGG11_CFG:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                v = v * width // 64
                layers.append(nn.Conv2d(c, v, 3, padding=1))
                if batch_norm:
                    layers.append(nn.BatchNorm2d(v))
                layers.append(nn.ReLU(inplace=True))
                c = v
        self.features = nn.Sequential(*layers)
        h = 8 * width
        self.classifier = nn.Sequential(
            nn.Linear(c, h),
            nn.ReLU(True),
            nn.Dropout(),
            nn.Linear(h, h),
            nn.ReLU(True),
            nn.Dropout(),
            nn.Linear(h, num_outputs),
        )

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


class _BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(_Registered):
    """CIFAR ResNet-18 (3x3 stem, no max-pool, global 4x4 average pool before the classifier).

    ``pooling=False`` removes the final average pool (the classifier sees the 512x4x4 map), the
    no-pooling variant for Fig. 3. ``width`` scales every stage (64 is the standard network).
    """

    def __init__(self, in_channels: int = 1, num_outputs: int = 1, pooling: bool = True, width: int = 64):
        super().__init__()
        self.pooling = pooling
        w = width
        self.conv1 = nn.Conv2d(in_channels, w, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(w)
        planes, layers = w, []
        for mult, stride in [(1, 1), (2, 2), (4, 2), (8, 2)]:
            layers.append(nn.Sequential(_BasicBlock(planes, w * mult, stride), _BasicBlock(w * mult, w * mult, 1)))
            planes = w * mult
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.linear = nn.Linear(planes * (1 if pooling else 16), num_outputs)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        if self.pooling:
            out = F.avg_pool2d(out, 4)
        return self.linear(out.flatten(1))


class _Bottleneck(nn.Module):
    def __init__(self, in_planes, growth_rate):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, 4 * growth_rate, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(4 * growth_rate)
        self.conv2 = nn.Conv2d(4 * growth_rate, growth_rate, 3, padding=1, bias=False)

    def forward(self, x):
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        return torch.cat([out, x], 1)


class _Transition(nn.Module):
    def __init__(self, in_planes, out_planes):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_planes)
        self.conv = nn.Conv2d(in_planes, out_planes, 1, bias=False)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class DenseNet121(_Registered):
    """CIFAR DenseNet-121 (growth 32, blocks 6-12-24-16, reduction 0.5) as in the original code."""

    def __init__(
        self,
        in_channels: int = 1,
        num_outputs: int = 1,
        growth_rate: int = 32,
        nblocks=(6, 12, 24, 16),
        reduction: float = 0.5,
    ):
        super().__init__()
        self.growth_rate = growth_rate
        planes = 2 * growth_rate
        self.conv1 = nn.Conv2d(in_channels, planes, 3, padding=1, bias=False)
        stages = []
        for i, nb in enumerate(nblocks):
            blocks = []
            for _ in range(nb):
                blocks.append(_Bottleneck(planes, growth_rate))
                planes += growth_rate
            stages.append(nn.Sequential(*blocks))
            if i < len(nblocks) - 1:
                out_planes = int(math.floor(planes * reduction))
                stages.append(_Transition(planes, out_planes))
                planes = out_planes
        self.features = nn.Sequential(*stages)
        self.bn = nn.BatchNorm2d(planes)
        self.linear = nn.Linear(planes, num_outputs)

    def forward(self, x):
        out = self.features(self.conv1(x))
        out = F.avg_pool2d(F.relu(self.bn(out)), 4)
        return self.linear(out.flatten(1))
