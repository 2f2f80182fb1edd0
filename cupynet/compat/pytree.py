"""``torch.utils._pytree`` for ``cupynet run``: flatten nested containers to leaves and build them back.

A pytree is a leaf, or a list, tuple, named tuple, dict, ``OrderedDict`` or ``defaultdict`` of pytrees.
Everything else is a leaf, ``None`` and tensors included (as torch 2.13). Dicts keep their insertion
order (torch's order, not sorted keys). Programs use it to walk batches: ``tree_map(lambda t: t.to(d), b)``.
"""

from __future__ import annotations

import collections

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "tree_structure",
           "tree_is_leaf"]


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def tree_is_leaf(tree) -> bool:
    """True when ``tree`` is not one of the containers a pytree walks into.

    Args:
        tree: any object.
    """
    return not isinstance(tree, (list, tuple, dict))


class TreeSpec:
    """The shape of a pytree without its leaves: the container type, its keys, and its children's specs.

    Args:
        type: the container type (None for a leaf).
        context: the dict keys, the named tuple's or defaultdict's extras (None otherwise).
        children_specs: one TreeSpec per child.
    """

    def __init__(self, type, context, children_specs):  # noqa: A002 - torch's argument name
        self.type, self.context, self.children_specs = type, context, list(children_specs)
        self.num_leaves = 1 if type is None else sum(c.num_leaves for c in self.children_specs)

    def is_leaf(self) -> bool:
        """True for the spec of one leaf."""
        return self.type is None

    def __eq__(self, other):
        return isinstance(other, TreeSpec) and (self.type, self.context, self.children_specs) == \
            (other.type, other.context, other.children_specs)

    def __hash__(self):
        return hash((self.type, self.num_leaves))

    def __repr__(self):
        if self.is_leaf():
            return "*"
        return f"TreeSpec({self.type.__name__}, {self.context!r}, {self.children_specs!r})"

    def unflatten(self, leaves):
        """The pytree of this shape holding ``leaves`` in order.

        Args:
            leaves: an iterable of exactly ``num_leaves`` values.
        """
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
                             f"to a pytree that holds {self.num_leaves} items ({self!r}).")
        return _build(self, iter(leaves))


class LeafSpec(TreeSpec):
    """The spec of one leaf."""

    def __init__(self):
        super().__init__(None, None, [])


def _children(tree):
    """(children, context) of a container."""
    if isinstance(tree, collections.defaultdict):
        return list(tree.values()), (tree.default_factory, list(tree))
    if isinstance(tree, dict):
        return list(tree.values()), list(tree)
    return list(tree), None


def _spec(tree, leaves: list) -> TreeSpec:
    if tree_is_leaf(tree):
        leaves.append(tree)
        return LeafSpec()
    children, context = _children(tree)
    return TreeSpec(type(tree), context, [_spec(child, leaves) for child in children])


def _build(spec: TreeSpec, leaves):
    if spec.is_leaf():
        return next(leaves)
    children = [_build(child, leaves) for child in spec.children_specs]
    if spec.type is collections.defaultdict or issubclass(spec.type, collections.defaultdict):
        factory, keys = spec.context
        return spec.type(factory, zip(keys, children))
    if issubclass(spec.type, dict):
        return spec.type(zip(spec.context, children))
    if issubclass(spec.type, tuple) and hasattr(spec.type, "_fields"):
        return spec.type(*children)
    return spec.type(children)


def tree_flatten(tree, is_leaf=None):
    """The leaves of ``tree`` (depth first, dicts in insertion order) and its ``TreeSpec``.

    Args:
        tree: a pytree.
        is_leaf: optional predicate: a node it accepts is a leaf even when it is a container.
    """
    leaves = []
    if is_leaf is None:
        return leaves, _spec(tree, leaves)
    return leaves, _spec_until(tree, leaves, is_leaf)


def _spec_until(tree, leaves: list, is_leaf) -> TreeSpec:
    if is_leaf(tree) or tree_is_leaf(tree):
        leaves.append(tree)
        return LeafSpec()
    children, context = _children(tree)
    return TreeSpec(type(tree), context, [_spec_until(child, leaves, is_leaf) for child in children])


def tree_unflatten(leaves, treespec: TreeSpec):
    """The pytree of shape ``treespec`` holding ``leaves``.

    Args:
        leaves: the leaves, in ``tree_flatten``'s order.
        treespec: the shape, from ``tree_flatten``.
    """
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_leaves(tree, is_leaf=None) -> list:
    """The leaves of ``tree``, in ``tree_flatten``'s order.

    Args:
        tree: a pytree.
        is_leaf: optional predicate, as in ``tree_flatten``.
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> TreeSpec:
    """The ``TreeSpec`` of ``tree``.

    Args:
        tree: a pytree.
        is_leaf: optional predicate, as in ``tree_flatten``.
    """
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """A pytree of ``tree``'s shape whose leaves are ``func(leaf, *leaves of rests at the same place)``.

    Args:
        func: called once per leaf.
        tree: a pytree.
        *rests: pytrees with ``tree``'s shape (their leaves may be subtrees where ``tree`` has a leaf).
        is_leaf: optional predicate, as in ``tree_flatten``.
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [_leaves_along(spec, rest) for rest in rests]
    return spec.unflatten(func(*values) for values in zip(leaves, *others))


def _leaves_along(spec: TreeSpec, tree) -> list:
    """The subtrees of ``tree`` at ``spec``'s leaves; a ValueError where its containers differ."""
    if spec.is_leaf():
        return [tree]
    if tree_is_leaf(tree) or type(tree) is not spec.type:
        raise ValueError(f"Node type mismatch; expected {spec.type}, but got {type(tree)}.")
    children, context = _children(tree)
    if context != spec.context or len(children) != len(spec.children_specs):
        raise ValueError(f"Node context mismatch for {spec.type.__name__}: expected {spec.context!r} with "
                         f"{len(spec.children_specs)} children, got {context!r} with {len(children)}.")
    return [leaf for child_spec, child in zip(spec.children_specs, children)
            for leaf in _leaves_along(child_spec, child)]
