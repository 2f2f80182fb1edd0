"""Stand-in ``torch`` for a ``cupynet run``'s spawned children: it becomes the runner's alias of ``torch``.

A child started with the spawn (or forkserver) method is a fresh interpreter that re-runs the script's
module as ``__mp_main__``, with the parent's ``sys.path``, on which the runner put this folder: the
script's ``import torch`` finds this file, which installs the runner's finder and puts the alias in its
place (see ``cupynet.compat.run.adopt_stand_in``). Under the runner itself the finder answers first and this
file is never imported.
"""

from cupynet.compat.run import adopt_stand_in

adopt_stand_in(__name__)
