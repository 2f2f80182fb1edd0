"""``torchvision.models``' ResNets (He et al. 2015), built from cupynet's layers.

The module names match torchvision's (``conv1``, ``bn1``, ``layer1.0.conv1``, ``layer2.0.downsample.0``,
``fc``, ...), so a torchvision ResNet's ``state_dict`` loads into cupynet's as it is. cupynet
downloads no weights: ``weights`` (and the old ``pretrained``) must be None / False.
"""

from __future__ import annotations

from cupynet.nn import init
from cupynet.nn.activation import ReLU
from cupynet.nn.batchnorm import BatchNorm2d
from cupynet.nn.containers import Sequential
from cupynet.nn.conv import Conv2d
from cupynet.nn.linear import Linear
from cupynet.nn.module import Module
from cupynet.nn.pooling import AdaptiveAvgPool2d, MaxPool2d
from cupynet.ops.shape import flatten

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152"]


def _conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    return Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups, bias=False,
                  dilation=dilation)


def _conv1x1(in_planes, out_planes, stride=1):
    return Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class _Block(Module):
    """A residual block: ``relu(residual(x) + shortcut(x))``; subclasses build the residual branch and set
    ``relu`` and ``downsample`` (registered where torchvision registers them, so the module order matches)."""

    def forward(self, x):
        """The block's output.

        Args:
            x: input (N, inplanes, H, W).
        """
        return self.relu(self.residual(x) + (x if self.downsample is None else self.downsample(x)))


class BasicBlock(_Block):
    """Two 3x3 convolutions and a shortcut: ``relu(bn(conv(relu(bn(conv(x))))) + shortcut(x))``.

    Args:
        inplanes: input channels.
        planes: output channels.
        stride: stride of the first convolution (and of the shortcut's).
        downsample: the shortcut's module when shapes change (a 1x1 conv + norm), else None.
        groups: must be 1.
        base_width: must be 64.
        dilation: must be 1.
        norm_layer: the normalisation class (default BatchNorm2d).
    """

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample, self.stride = downsample, stride

    def residual(self, x):
        """``bn(conv(relu(bn(conv(x)))))``.

        Args:
            x: input (N, inplanes, H, W).
        """
        return self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))


class Bottleneck(_Block):
    """1x1 reduce, 3x3 (the stride, groups and dilation), 1x1 expand (x4), plus a shortcut (ResNet v1.5).

    Args:
        inplanes: input channels.
        planes: the block's inner width before ``base_width`` / ``groups`` scaling; output is 4 * planes.
        stride: stride of the 3x3 convolution.
        downsample: the shortcut's module when shapes change, else None.
        groups: groups of the 3x3 convolution (ResNeXt).
        base_width: width per group (64 for ResNet; 128 for Wide ResNet).
        dilation: dilation of the 3x3 convolution.
        norm_layer: the normalisation class (default BatchNorm2d).
    """

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1,
                 norm_layer=None):
        super().__init__()
        norm_layer = norm_layer or BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = _conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = _conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = _conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = ReLU(inplace=True)
        self.downsample, self.stride = downsample, stride

    def residual(self, x):
        """1x1 reduce, 3x3, 1x1 expand, each normalised (ReLU between).

        Args:
            x: input (N, inplanes, H, W).
        """
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.bn3(self.conv3(out))


class ResNet(Module):
    """A ResNet: 7x7 stem, max pool, four stages of blocks, global average pool, linear classifier.

    Args:
        block: ``BasicBlock`` or ``Bottleneck``.
        layers: blocks per stage, e.g. [2, 2, 2, 2] for ResNet-18.
        num_classes: outputs of the classifier.
        zero_init_residual: start each block's last norm at weight 0 (each block starts as the identity).
        groups: groups of the Bottleneck 3x3 convolutions.
        width_per_group: width per group of the Bottleneck 3x3 convolutions.
        replace_stride_with_dilation: three bools: stages 2-4 dilate instead of striding.
        norm_layer: the normalisation class (default BatchNorm2d).
    """

    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1, width_per_group=64,
                 replace_stride_with_dilation=None, norm_layer=None):
        super().__init__()
        self._norm_layer = norm_layer or BatchNorm2d
        self.inplanes, self.dilation = 64, 1
        dilate = replace_stride_with_dilation or [False, False, False]
        if len(dilate) != 3:
            raise ValueError(f"replace_stride_with_dilation should be None or a 3-element tuple, got {dilate}")
        if len(layers) != 4:
            raise ValueError(f"ResNet: layers must give the block count of 4 stages, got {list(layers)}")
        self.groups, self.base_width = groups, width_per_group
        self.conv1 = Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = self._norm_layer(self.inplanes)
        self.relu = ReLU(inplace=True)
        self.maxpool = MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=dilate[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=dilate[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=dilate[2])
        self.avgpool = AdaptiveAvgPool2d((1, 1))
        self.fc = Linear(512 * block.expansion, num_classes)
        self._init_weights(zero_init_residual)

    def _init_weights(self, zero_init_residual):
        # NOTE: He-normal (fan_out) convolutions and unit-scale norms: torchvision's starting point
        for m in self.modules():
            if isinstance(m, Conv2d):
                init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, BatchNorm2d):
                init.constant_(m.weight, 1)
                init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                last = getattr(m, "bn3", None) if isinstance(m, Bottleneck) else getattr(m, "bn2", None)
                if isinstance(m, (Bottleneck, BasicBlock)) and last is not None and last.weight is not None:
                    init.constant_(last.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer, previous_dilation = self._norm_layer, self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = Sequential(_conv1x1(self.inplanes, planes * block.expansion, stride),
                                    norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                         dilation=self.dilation, norm_layer=norm_layer) for _ in range(1, blocks)]
        return Sequential(*layers)

    def forward(self, x):
        """Class scores (N, num_classes).

        Args:
            x: images (N, 3, H, W).
        """
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(flatten(self.avgpool(x), 1))


def _resnet(name, block, layers, weights, kwargs):
    if kwargs.pop("pretrained", False) or weights is not None:
        raise ValueError(f"{name}: cupynet downloads no weights; pass weights=None and load a state_dict "
                         f"yourself (a torchvision ResNet's state_dict loads as it is), got weights={weights!r}")
    return ResNet(block, layers, **kwargs)


def _builder(name, block, layers):
    """torchvision's ``resnetNN(*, weights=None, progress=True, **kwargs)`` for one depth."""

    def build(*, weights=None, progress=True, **kwargs):
        return _resnet(name, block, layers, weights, kwargs)

    build.__name__ = build.__qualname__ = name
    build.__doc__ = (f"{name.replace('resnet', 'ResNet-')} ({block.__name__}, {layers}), randomly initialised.\n\n"
                     "    Args:\n"
                     "        weights: must be None (cupynet downloads no weights).\n"
                     "        progress: accepted for torchvision's signature (nothing is downloaded).\n"
                     "        kwargs: ``ResNet``'s options (num_classes, zero_init_residual, norm_layer, ...).\n")
    return build


resnet18 = _builder("resnet18", BasicBlock, [2, 2, 2, 2])
resnet34 = _builder("resnet34", BasicBlock, [3, 4, 6, 3])
resnet50 = _builder("resnet50", Bottleneck, [3, 4, 6, 3])
resnet101 = _builder("resnet101", Bottleneck, [3, 4, 23, 3])
resnet152 = _builder("resnet152", Bottleneck, [3, 8, 36, 3])
