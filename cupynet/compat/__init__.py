"""The compatibility surface: what exists so that PyTorch programs (and two older AMP APIs) run unmodified.

The core (``cupynet.tensor``, ``autograd``, ``ops``, ``amp``, ``nn``, ``optim``, ``data``, ...) is what a
learner reads; it never imports this package (``.importlinter`` forbids it). What is here is reached
through the names programs already use, each loaded on its first use (the packages name these modules
in their lazy tables, ``cupynet/_lazy.py``), or through ``cupynet run``:

* ``run.py``: ``cupynet run script.py``, torch's module names mapped onto cupynet's (``cupynet.run``);
  ``torch_stand_ins/`` (not a package): the ``torch``/``torchvision`` a run's spawned children import;
* ``nn_modules/``: torch.nn.modules' submodule paths for cupynet's layers (``cupynet.nn.modules``);
* ``legacy_tensors.py``: the legacy typed constructors ``FloatTensor`` & co. (``cupynet.FloatTensor``);
* ``variable.py``: ``Variable``, the pre-0.4 wrapper (``cupynet.autograd.Variable``);
* ``cuda_amp.py``: ``torch.cuda.amp``, the CUDA spellings of autocast and GradScaler (``cupynet.cuda.amp``);
* ``amp_prototype.py``: the early torch.amp prototype's API (``cupynet.amp.prototype``,
  ``cupynet.amp.add_amp_attributes``, ``enable_autocasting``, ``scale_outputs``);
* ``netcl.py``: netcl's AMP API (``cupynet.amp.netcl``).

Each module is a thin layer over the core; nothing here is imported by ``import cupynet``.
"""
