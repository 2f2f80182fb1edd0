"""``cupynet run script.py [args]``: run an unmodified PyTorch script on cupynet.

Also ``python -m cupynet.run script.py`` (``cupynet/run.py`` is this module's command-line name);
``cupynet.run.X`` is ``cupynet.compat.run.X``.

The runner maps module *names* only: while the script runs, ``import torch`` gives
cupynet, ``import torch.nn.functional as F`` gives ``cupynet.nn.functional``, and so
on, by one table (``TORCH_MODULES``). It implements nothing itself: a name the table
sends to cupynet is cupynet's own object, and a name cupynet lacks stops the run with
one line, ``cupynet has no torch.X yet``, and exit status ``EXIT_MISSING`` (3).

How the mapping works, top to bottom:

* ``TorchFinder``, a ``sys.meta_path`` finder the runner installs for the run only
  (never at ``import cupynet``), answers every ``torch`` / ``torch.*`` import: a name in
  the table becomes a ``TorchAlias`` module; any other raises ``TorchModuleMissing``.
* A ``TorchAlias`` is a module named ``torch.nn`` (say) that forwards every attribute
  read and write to its cupynet module, so ``torch.backends.cudnn.benchmark = True``
  sets cupynet's setting; a name the cupynet module lacks raises ``TorchAttributeMissing``,
  an ``AttributeError``, so ``hasattr(torch, "x")`` in user code still answers False.
* ``run_script`` sets ``sys.argv`` and ``sys.path[0]`` as ``python script.py`` would, runs
  the script as ``__main__`` and puts everything back afterwards (also ``sys.modules``,
  where a real torch may have been imported before).

Exit statuses: 0 when the script ends normally (or its ``sys.exit`` code), 1 when it
raises (its traceback printed as python prints it), 2 when the script cannot be
opened, 3 (``EXIT_MISSING``) when it touched a torch name cupynet does not have: a module, a
module's name, or an attribute the script read of a cupynet class or object it reached through
torch (``nn.Embedding.from_pretrained``, ``nn.Sequential(...).get_extra_state``,
``optim.SGD(...).register_step_post_hook``). A missing attribute of the script's own classes
(subclasses of ``nn.Module`` included) stays a traceback: it may be the script's own typo.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import pathlib
import re
import runpy
import sys
import traceback
import types

__all__ = ["TORCH_MODULES", "TORCH_EMPTY_MODULES", "MAPPED_VERSIONS", "MappedDistribution", "EXIT_MISSING",
           "TorchAttributeMissing", "TorchModuleMissing",
           "TorchAlias", "TorchFinder", "torch_modules", "torch_name_of", "has_module", "run_script", "main"]

EXIT_MISSING = 3

# NOTE: the one table of the drop-in: torch module name -> the cupynet module that stands for it.
# A target cupynet does not ship (yet) makes the torch name a missing one, reported as such.
TORCH_MODULES = {
    "torch": "cupynet",
    "torch.nn": "cupynet.nn",
    "torch.nn.functional": "cupynet.nn.functional",
    "torch.nn.init": "cupynet.nn.init",
    "torch.nn.parameter": "cupynet.nn.parameter",
    "torch.nn.modules": "cupynet.compat.nn_modules",
    # NOTE: torch.nn.modules' submodules: the keys of cupynet.compat.nn_modules.TORCH_NN_MODULES (test_nn_modules)
    "torch.nn.modules.activation": "cupynet.compat.nn_modules.activation",
    "torch.nn.modules.batchnorm": "cupynet.compat.nn_modules.batchnorm",
    "torch.nn.modules.container": "cupynet.compat.nn_modules.container",
    "torch.nn.modules.conv": "cupynet.compat.nn_modules.conv",
    "torch.nn.modules.distance": "cupynet.compat.nn_modules.distance",
    "torch.nn.modules.dropout": "cupynet.compat.nn_modules.dropout",
    "torch.nn.modules.flatten": "cupynet.compat.nn_modules.flatten",
    "torch.nn.modules.fold": "cupynet.compat.nn_modules.fold",
    "torch.nn.modules.instancenorm": "cupynet.compat.nn_modules.instancenorm",
    "torch.nn.modules.linear": "cupynet.compat.nn_modules.linear",
    "torch.nn.modules.loss": "cupynet.compat.nn_modules.loss",
    "torch.nn.modules.module": "cupynet.compat.nn_modules.module",
    "torch.nn.modules.normalization": "cupynet.compat.nn_modules.normalization",
    "torch.nn.modules.padding": "cupynet.compat.nn_modules.padding",
    "torch.nn.modules.pixelshuffle": "cupynet.compat.nn_modules.pixelshuffle",
    "torch.nn.modules.pooling": "cupynet.compat.nn_modules.pooling",
    "torch.nn.modules.rnn": "cupynet.compat.nn_modules.rnn",
    "torch.nn.modules.sparse": "cupynet.compat.nn_modules.sparse",
    "torch.nn.modules.transformer": "cupynet.compat.nn_modules.transformer",
    "torch.nn.modules.upsampling": "cupynet.compat.nn_modules.upsampling",
    "torch.nn.utils": "cupynet.nn.utils",
    "torch.nn.utils.rnn": "cupynet.nn.utils.rnn",
    "torch.nn.utils.fusion": "cupynet.compat.fusion",
    "torch.nn.utils.parametrize": "cupynet.nn.utils.parametrize",
    "torch.nn.utils.parametrizations": "cupynet.nn.utils.parametrizations",
    "torch.nn.parallel": "cupynet.nn.parallel",
    "torch.optim": "cupynet.optim",
    "torch.optim.lr_scheduler": "cupynet.optim.lr_scheduler",
    "torch.optim.optimizer": "cupynet.optim.optimizer",
    "torch.utils": "cupynet.utils",
    "torch.utils.data": "cupynet.utils.data",
    "torch.utils.data.dataloader": "cupynet.data.dataloader",
    "torch.utils.data.dataset": "cupynet.data.dataset",
    "torch.utils.data.sampler": "cupynet.data.sampler",
    "torch.utils.data.distributed": "cupynet.data.distributed",
    "torch.utils.checkpoint": "cupynet.utils.checkpoint",
    "torch.utils._pytree": "cupynet.compat.pytree",
    "torch.utils.tensorboard": "cupynet.utils.tensorboard",
    "torch.utils.mobile_optimizer": "cupynet.compat.mobile_optimizer",
    "torch.hub": "cupynet.compat.hub",
    "torch.amp": "cupynet.amp",
    "torch.jit": "cupynet.compat.jit",
    "torch.cuda": "cupynet.cuda",
    "torch.cuda.amp": "cupynet.compat.cuda_amp",
    "torch.backends": "cupynet.backends",
    "torch.backends.cuda": "cupynet.backends.cuda",
    "torch.backends.cudnn": "cupynet.backends.cudnn",
    "torch.backends.mps": "cupynet.backends.mps",
    "torch.accelerator": "cupynet.accelerator",
    "torch.autograd": "cupynet.autograd",
    "torch.autograd.function": "cupynet.autograd.function",
    "torch.autograd.functional": "cupynet.autograd.functional",
    "torch.linalg": "cupynet.linalg",
    "torch.sparse": "cupynet.compat.sparse",
    "torch.distributions": "cupynet.distributions",
    "torch.distributed": "cupynet.distributed",
    "torch.random": "cupynet.random",
    "torch.serialization": "cupynet.serialization",
    "torch.multiprocessing": "cupynet.multiprocessing",
    "torchvision": "cupynet.vision",
    "torchvision.datasets": "cupynet.vision.datasets",
    "torchvision.transforms": "cupynet.vision.transforms",
    "torchvision.transforms.functional": "cupynet.vision.transforms.functional",
    "torchvision.utils": "cupynet.vision.utils",
    "torchvision.models": "cupynet.vision.models",
    "torchvision.ops": "cupynet.vision.ops",
}

# NOTE: what ``torch.__version__`` (and ``importlib.metadata.version("torch")``) say under the runner: the
# torch release whose API cupynet follows (docs/pytorch_compat.md's tables are generated against it), with a
# local version label naming cupynet, so version checks in programs (``packaging.version``) take the paths
# of that release. ``cupynet.__version__`` stays cupynet's own. torchvision 0.28 is torch 2.13's companion.
MAPPED_VERSIONS = {"torch": "2.13.0+cupynet", "torchvision": "0.28.0+cupynet"}

# NOTE: torch modules that scripts import at the top but use only on an optional path (word_language_model's
# `import torch.onnx`, used by --onnx-export alone). cupynet has no counterpart; the import gives an empty
# module, so the script starts, and the first name read from it is reported missing as usual
# (`cupynet has no torch.onnx.export yet`).
TORCH_EMPTY_MODULES = ("torch.onnx", "torch.overrides")

# NOTE: the top-level names the finder answers: torch, and the companion packages the table maps
MAPPED_ROOTS = tuple(sorted({name.split(".")[0] for name in TORCH_MODULES}))


def _is_mapped(name: str) -> bool:
    return name.split(".")[0] in MAPPED_ROOTS


# NOTE: torch's companion packages import torch themselves; cupynet ships none of them, so under the runner
# their absence is reported as a missing name too (only when they are not installed: none may load torch).
TORCH_FAMILY = ("torch", "torchvision", "torchaudio", "torchtext")


def torch_modules() -> dict:
    """The torch module names the runner maps, each with its cupynet module name (a copy of the table)."""
    return dict(TORCH_MODULES)


class TorchAttributeMissing(AttributeError):  # noqa: N818 - names what is missing, like ModuleNotFoundError
    """A torch name read from a mapped module that cupynet does not have (an ``AttributeError``).

    Args:
        torch_name: the full torch name, e.g. ``"torch.nn.Bar"``.
    """

    def __init__(self, torch_name: str):
        super().__init__(f"cupynet has no {torch_name} yet")
        self.torch_name = torch_name


class TorchModuleMissing(ModuleNotFoundError):  # noqa: N818 - names what is missing
    """A torch module the runner cannot map (not in the table, or cupynet lacks its target).

    Args:
        torch_name: the full module name, e.g. ``"torch.fx"``.
    """

    def __init__(self, torch_name: str):
        super().__init__(f"cupynet has no {torch_name} yet", name=torch_name)
        self.torch_name = torch_name


# NOTE: the descriptor of a module's own namespace (TorchAlias overrides ``__dict__`` for readers)
_MODULE_DICT = types.ModuleType.__dict__["__dict__"]


class TorchAlias(types.ModuleType):
    """The module a script gets for ``torch.X``: every attribute read and write goes to cupynet's module.

    NOTE: dunder names (``__spec__``, ``__path__`` ...) and the aliases of torch submodules are kept on the
    alias itself, so the import system's bookkeeping never writes into cupynet's own modules.

    Args:
        torch_name: the torch module name, e.g. ``"torch.nn"``.
        target: the cupynet module it stands for.
    """

    def __init__(self, torch_name: str, target: types.ModuleType):
        super().__init__(torch_name, target.__doc__)
        object.__setattr__(self, "_cupynet_target", target)

    def __getattr__(self, name):
        target = object.__getattribute__(self, "_cupynet_target")
        full = f"{self.__name__}.{name}"
        if full in TORCH_MODULES or full in TORCH_EMPTY_MODULES:
            return importlib.import_module(full)
        try:
            return getattr(target, name)
        except AttributeError:
            raise TorchAttributeMissing(full) from None

    def __setattr__(self, name, value):
        if (name.startswith("__") and name.endswith("__")) or isinstance(value, TorchAlias):
            object.__setattr__(self, name, value)
        else:
            setattr(object.__getattribute__(self, "_cupynet_target"), name, value)

    @property
    def __dict__(self):
        """The cupynet module's names, then the alias's own (dunders, submodule aliases), as one new dict.

        NOTE: what ``vars(torch.X)`` and ``torch.X.__dict__[name]`` read (imagenet looks its models up by
        ``models.__dict__[arch]``). It is a snapshot: attribute writes go through ``__setattr__``. Python's
        own machinery reads the alias's real namespace (the C slot), never this property.
        """
        target = object.__getattribute__(self, "_cupynet_target")
        return {**vars(target), **_MODULE_DICT.__get__(self)}

    def __dir__(self):
        return sorted(self.__dict__)

    def __repr__(self):
        return f"<module {self.__name__!r} (cupynet: {object.__getattribute__(self, '_cupynet_target').__name__})>"


class _AliasLoader(importlib.abc.Loader):
    """Makes the ``TorchAlias`` of a mapped name; there is nothing to execute."""

    def __init__(self, target: types.ModuleType):
        self.target = target

    def create_module(self, spec):
        alias = TorchAlias(spec.name, self.target)
        if spec.name in MAPPED_VERSIONS:
            alias.__version__ = MAPPED_VERSIONS[spec.name]  # NOTE: a dunder: kept on the alias, not on cupynet
        return alias

    def exec_module(self, module):
        return None


def has_module(name: str) -> bool:
    """Whether module ``name`` can be imported (False also when a parent of it is a module, not a package).

    Args:
        name: a dotted module name, e.g. ``"cupynet.nn.utils.rnn"``.
    """
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


class TorchFinder(importlib.abc.MetaPathFinder):
    """The ``sys.meta_path`` finder of a run: answers ``torch`` and ``torch.*`` from ``TORCH_MODULES``."""

    def find_spec(self, fullname, path=None, target=None):
        """The spec of a ``torch`` module's alias; None for every other module.

        Args:
            fullname: the module name being imported.
            path: the parent package's search path (unused).
            target: the module being reloaded, if any (unused).
        """
        if not _is_mapped(fullname):
            return None
        if fullname in TORCH_EMPTY_MODULES:
            target = types.ModuleType(f"cupynet (no {fullname})", f"cupynet has no counterpart of {fullname}.")
        else:
            cupynet_name = TORCH_MODULES.get(fullname)
            if cupynet_name is None or not has_module(cupynet_name):
                raise TorchModuleMissing(fullname)
            target = importlib.import_module(cupynet_name)
        spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(target), is_package=True)
        spec.submodule_search_locations = []  # NOTE: empty: nothing on disk is ever imported as torch.*
        return spec

    def find_distributions(self, context=None):
        """The installed-package records of torch and torchvision as the run maps them (``importlib.metadata``).

        NOTE: a program asks ``importlib.metadata.version("torchvision")`` (ultralytics' requirement checks);
        under the runner the answer is the mapped version (``MAPPED_VERSIONS``), found before any real
        torch's record, since this finder comes first on ``sys.meta_path``.

        Args:
            context: ``importlib.metadata.DistributionFinder.Context``; its ``name`` is the package asked for.
        """
        name = getattr(context, "name", None)
        normal = re.sub(r"[-_.]+", "-", name).lower() if isinstance(name, str) else None
        if normal in MAPPED_VERSIONS:
            return iter([MappedDistribution(normal, MAPPED_VERSIONS[normal])])
        return iter(())


class MappedDistribution(importlib.metadata.Distribution):
    """The ``importlib.metadata`` record of a package the runner maps to cupynet (name and version only).

    Args:
        name: ``"torch"`` or ``"torchvision"``.
        version: its mapped version.
    """

    def __init__(self, name: str, version: str):
        self._name, self._version = name, version

    def read_text(self, filename):
        """The METADATA text (name, version, a summary); None for every other file, as for a bare record.

        Args:
            filename: the metadata file asked for.
        """
        if filename != "METADATA":
            return None
        return (f"Metadata-Version: 2.1\nName: {self._name}\nVersion: {self._version}\n"
                f"Summary: {self._name} mapped to cupynet by `cupynet run`\n")

    def locate_file(self, path):
        """A path under cupynet's package folder (the mapped package has no files of its own).

        Args:
            path: a file path relative to the distribution.
        """
        return pathlib.Path(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) / path


_CANNOT_IMPORT = re.compile(r"^cannot import name '([^']+)' from '((?:torch|torchvision)(?:\.[\w.]+)?)'")


def missing_torch_name(error: BaseException):
    """The torch name an exception says cupynet lacks, or None when it is about something else.

    Args:
        error: an exception that ended the script.
    """
    if isinstance(error, (TorchAttributeMissing, TorchModuleMissing)):
        return error.torch_name
    if isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] in TORCH_FAMILY:
        return error.name
    if isinstance(error, ImportError):
        found = _CANNOT_IMPORT.match(str(error))
        return f"{found.group(2)}.{found.group(1)}" if found else None
    if isinstance(error, AttributeError) and _is_cupynet_tensor(getattr(error, "obj", None)):
        return f"torch.Tensor.{error.name}"
    if isinstance(error, AttributeError) and error.name and _asked_by_user_code(error.__traceback__):
        owner = torch_name_of(getattr(error, "obj", None))
        return f"{owner}.{error.name}" if owner is not None else None
    return None


def _is_cupynet_tensor(obj) -> bool:
    tensor = sys.modules.get("cupynet.tensor")
    return tensor is not None and isinstance(obj, tensor.Tensor)


def _is_cupynet_name(name) -> bool:
    return isinstance(name, str) and (name == "cupynet" or name.startswith("cupynet."))


def torch_name_of(obj):
    """The torch name of a cupynet module, class or object (``cupynet.nn.Embedding`` -> ``torch.nn.Embedding``).

    NOTE: an object is named by its class. A class is named by the shortest torch module whose cupynet
    module holds it (only modules already imported are searched); one held by none is named by its own
    module path with ``cupynet`` read as ``torch``. None for anything that is not cupynet's (the user's own
    classes, subclasses of cupynet's included: a missing attribute there is the user's to report).

    Args:
        obj: the object whose attribute was missing (``AttributeError.obj``).
    """
    if isinstance(obj, types.ModuleType):
        if not _is_cupynet_name(obj.__name__):
            return None
        mapped = sorted(torch for torch, target in TORCH_MODULES.items() if target == obj.__name__)
        return mapped[0] if mapped else "torch" + obj.__name__[len("cupynet"):]
    cls = obj if isinstance(obj, type) else type(obj)
    if not _is_cupynet_name(getattr(cls, "__module__", None)):
        return None
    for torch_module, target in sorted(TORCH_MODULES.items(), key=lambda item: (len(item[0]), item[0])):
        module = sys.modules.get(target)
        if module is not None and vars(module).get(cls.__name__) is cls:
            return f"{torch_module}.{cls.__name__}"
    return "torch" + cls.__module__[len("cupynet"):] + "." + cls.__qualname__


def _asked_by_user_code(tb) -> bool:
    """Whether the failed attribute read was written outside cupynet (its ``__getattr__`` hooks aside).

    NOTE: an AttributeError raised by cupynet's own code reading its own objects is a cupynet bug, and
    keeps its traceback; only a read the user's code made is a missing torch name.
    """
    frames = [frame for frame, _ in traceback.walk_tb(tb)]
    while frames and frames[-1].f_code.co_name in ("__getattr__", "__getattribute__") and \
            _in_package(frames[-1].f_code.co_filename):
        frames.pop()
    return bool(frames) and not _in_package(frames[-1].f_code.co_filename)


def _in_package(filename: str) -> bool:
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # NOTE: cupynet/, above compat/
    return filename.startswith("<frozen") or os.path.abspath(filename).startswith(package + os.sep)


# NOTE: the folder of stand-in ``torch`` / ``torchvision`` modules a run puts on sys.path for its spawned children
STAND_INS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_stand_ins")


def adopt_stand_in(name: str) -> None:
    """Make the stand-in module ``name`` (being imported) become its alias: install the finder, import again.

    NOTE: a spawned child of a run re-imports the script with the parent's sys.path but none of its
    finders; the first ``import torch`` (or ``torchvision``) finds the stand-in, which calls this. The
    import system returns whatever ``sys.modules[name]`` holds once the stand-in has run: the alias.

    Args:
        name: the stand-in's module name, ``"torch"`` or ``"torchvision"``.
    """
    if not any(isinstance(finder, TorchFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, TorchFinder())
    del sys.modules[name]
    importlib.import_module(name)


class _Installed:
    """The process state a run changes (argv, path, meta_path, torch modules), saved to be put back.

    NOTE: sys.path gets the script's folder first (as ``python script.py``) and ``STAND_INS`` second: a
    spawned child receives the parent's sys.path before it re-runs the script, so its ``import torch``
    finds a stand-in that installs the finder there (the parent's finder answers before any path entry).
    """

    def __init__(self, script: str, args: list):
        self.argv, self.script_dir = sys.argv, os.path.dirname(os.path.abspath(script))
        self.torch = {name: sys.modules.pop(name) for name in list(sys.modules) if _is_mapped(name)}
        self.finder = TorchFinder()
        sys.argv = [script, *args]
        sys.path[0:0] = [self.script_dir, STAND_INS]
        sys.meta_path.insert(0, self.finder)

    def restore(self):
        sys.meta_path.remove(self.finder)
        for name in [n for n in sys.modules if _is_mapped(n)]:
            del sys.modules[name]
        sys.modules.update(self.torch)
        sys.argv = self.argv
        for entry in (self.script_dir, STAND_INS):
            if entry in sys.path:
                sys.path.remove(entry)


def run_script(script: str, args=()) -> int:
    """Run ``script`` as ``__main__`` with torch names mapped to cupynet; return the exit status.

    Args:
        script: the path of the PyTorch script.
        args: its command-line arguments (``sys.argv[1:]`` inside the script).
    """
    if not os.path.isfile(script):
        print(f"cupynet run: can't open file {script!r}: no such file", file=sys.stderr)
        return 2
    installed = _Installed(script, list(args))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001 - everything the script raised is reported, as python does
        return _report(script, error)
    finally:
        installed.restore()
    return 0


def _report(script: str, error: BaseException) -> int:
    name = missing_torch_name(error)
    if name is not None:
        print(f"cupynet has no {name} yet ({_where(script, error.__traceback__)})", file=sys.stderr)
        return EXIT_MISSING
    tb = error.__traceback__
    script_path = os.path.abspath(script)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script_path:
        tb = tb.tb_next  # NOTE: drop the runner's and runpy's frames, as python's own traceback has none
    traceback.print_exception(type(error), error, tb or error.__traceback__, file=sys.stderr)
    return 130 if isinstance(error, KeyboardInterrupt) else 1


def _where(script: str, tb) -> str:
    """``file:line`` of the innermost frame outside cupynet (the user's code that asked for the name)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # NOTE: cupynet/, above compat/
    where = script
    for frame, line in traceback.walk_tb(tb):
        filename = frame.f_code.co_filename
        if not filename.startswith("<frozen") and not os.path.abspath(filename).startswith(package + os.sep):
            where = f"{frame.f_code.co_filename}:{line}"
    return where


def main(argv=None) -> int:
    """Entry point of ``cupynet run`` and ``python -m cupynet.run``.

    Args:
        argv: ``[script, *script_args]`` (default: ``sys.argv[1:]``).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="cupynet run", description="Run an unmodified PyTorch script on cupynet "
                                     "(torch module names map to cupynet's; see docs/pytorch_compat.md).")
    parser.add_argument("script", help="the PyTorch script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help(sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    return run_script(argv[0], argv[1:])


if __name__ == "__main__":
    # NOTE: `python -m cupynet.compat.run` runs this file as __main__; hand over to the imported module so
    # that the exception classes the aliases raise are the ones `cupynet.compat.run` names.
    from cupynet.compat.run import main as _main
    sys.exit(_main())
