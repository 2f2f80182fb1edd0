"""Stand-in ``torchvision`` for a ``cupynet run``'s spawned children (how and why: ``torch.py`` beside it)."""

from cupynet.compat.run import adopt_stand_in

adopt_stand_in(__name__)
