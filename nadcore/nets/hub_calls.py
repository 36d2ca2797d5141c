"""Calling a model hub's constructors with a spec's keywords (:mod:`nadcore.nets.hub`): keywords a
constructor fixes itself are rewritten away, TypeErrors about keywords become a
:class:`ModelSpecError` that names the keyword and what to do."""

from __future__ import annotations

import ast
import difflib
import inspect
import re
import textwrap

__all__ = [
    "ModelSpecError",
    "MULTIPLE",
    "UNEXPECTED",
    "without_fixed_keywords",
    "rewrite_without_fixed_keywords",
    "accepted_keywords",
    "may_take",
    "returned_class",
    "call_with_overrides",
    "hint",
]


class ModelSpecError(ValueError):
    """A model specification could not be resolved or the model it builds is unusable (also
    raised by :mod:`nadcore.nets.registry` for every kind of spec)."""


# --------------------------------------------------------------------------------------------
# Entrypoints whose fixed keywords the user overrides
# --------------------------------------------------------------------------------------------
MULTIPLE = re.compile(r"got multiple values for (?:keyword )?argument '(\w+)'")
UNEXPECTED = re.compile(r"got (?:an )?unexpected keyword argument(?:\(s\): \[)? ?'(\w+)'")


def without_fixed_keywords(fn, overridden):
    key = (inspect.unwrap(fn), frozenset(overridden))
    if key not in REWRITTEN:
        REWRITTEN[key] = rewrite_without_fixed_keywords(fn, overridden)
    return REWRITTEN[key]


#: rewritten entrypoints by (entrypoint, overridden keywords): NADs build thousands of networks
REWRITTEN: dict = {}


def rewrite_without_fixed_keywords(fn, overridden):
    """A copy of entrypoint ``fn`` (timm ``@register_model`` or torchvision builder) whose calls
    that forward ``**kwargs`` no longer pass the keywords in ``overridden`` themselves, so the
    caller's values win (e.g. ``dict(patch_size=16, num_blocks=8, **kwargs)``)."""
    fn = inspect.unwrap(fn)
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise ModelSpecError(f"cannot read the source of {fn.__qualname__} to override its fixed keywords: {e}") from e
    tree = ast.parse(source)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise ModelSpecError(f"unexpected source for {fn.__qualname__}")
    fdef.decorator_list = []
    removed = set()

    class Strip(ast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if any(k.arg is None for k in node.keywords):  # the call forwards **kwargs
                keep = []
                for k in node.keywords:
                    if k.arg is not None and k.arg in overridden:
                        removed.add(k.arg)
                    else:
                        keep.append(k)
                node.keywords = keep
            return node

    tree = ast.fix_missing_locations(Strip().visit(tree))
    namespace = dict(fn.__globals__)  # a copy: the real module is left untouched
    exec(compile(tree, inspect.getsourcefile(fn) or "<entrypoint>", "exec"), namespace)
    return namespace[fdef.name], removed


def accepted_keywords(cls) -> list[str]:
    try:
        params = inspect.signature(cls.__init__ if inspect.isclass(cls) else cls).parameters
    except (TypeError, ValueError):
        return []
    return [p for p, v in params.items() if p != "self" and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)]


def may_take(cls, key) -> bool:
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return True
    return key in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def returned_class(fn):
    ann = inspect.signature(inspect.unwrap(fn)).return_annotation
    if isinstance(ann, str):  # postponed annotations
        ann = inspect.unwrap(fn).__globals__.get(ann)
    return ann if inspect.isclass(ann) else None


def call_with_overrides(label, fn, cls, kwargs, user_keys, spec, retry_without=(), entry=None, fixed=None):
    """Call ``fn(**kwargs)``; translate TypeErrors about keywords into ModelSpecError, dropping
    keywords in ``retry_without`` (set by the hub, not the user) when the model rejects them.
    If ``entry`` (the entrypoint/builder ``fn`` calls) fixes a keyword given in ``kwargs``, call a
    copy of ``entry`` without its fixed values instead, as ``entry(**fixed, **kwargs)``."""
    kwargs = dict(kwargs)
    current, extra = fn, {}
    for _ in range(8):
        try:
            return current(**extra, **kwargs)
        except TypeError as e:
            msg = str(e)
            m = UNEXPECTED.search(msg)
            if m and m.group(1) in retry_without and m.group(1) not in user_keys:
                kwargs.pop(m.group(1))
                continue
            if m:
                ok = accepted_keywords(cls) if cls is not None else []
                close = difflib.get_close_matches(m.group(1), ok, n=3)
                raise ModelSpecError(
                    f"{label} does not accept the keyword {m.group(1)!r} (from {spec!r}): {type(e).__name__}: {msg}. "
                    + (f"Did you mean {', '.join(close)}? " if close else "")
                    + (f"{cls.__name__} accepts: {', '.join(ok)}." if ok else "Remove it from the spec.")
                ) from e
            m = MULTIPLE.search(msg)
            if m and current is fn and entry is not None:
                current, removed = without_fixed_keywords(entry, set(kwargs))
                extra = dict(fixed or {})
                if removed:
                    continue
            raise ModelSpecError(
                f"building {label} from {spec!r} failed: {type(e).__name__}: {msg}. " + hint(msg)
            ) from e
        except ModelSpecError:
            raise
        except Exception as e:  # assertions and ValueErrors raised by constructors
            raise ModelSpecError(
                f"building {label} from {spec!r} failed: {type(e).__name__}: {e}. " + hint(str(e))
            ) from e
    raise ModelSpecError(f"building {label} from {spec!r} failed repeatedly on its keywords")


def hint(msg: str) -> str:
    low = msg.lower()
    if "object is not callable" in low:
        return (
            "Hint: a keyword expects a class or function (e.g. act_layer, norm_layer), but spec values are "
            "literals or strings; leave that keyword at its default."
        )
    if "exceptions must derive from baseexception" in low:
        return (
            "Hint: the model rejected a keyword value with a malformed raise (a timm bug), e.g. XCiT's "
            "convolutional patch embedding only takes patch_size=8 or 16."
        )
    if "patch" in low or "divisible" in low or "indivisible" in low:
        return (
            "Hint: the patch size must divide the image size (override patch_size=4 or 8 for 32x32), and "
            "window sizes must divide the token grid (override window_size)."
        )
    if (
        "img_size" in low
        or "image size" in low
        or "doesn't match model" in low
        or "wrong image" in low
        or "input image" in low
        or "position" in low
    ):
        return "Hint: set img_size (timm) / image_size (torchvision) to the input size, e.g. img_size=32."
    if (
        "output size is too small" in low
        or "kernel size can't be greater" in low
        or "non-positive" in low
        or "larger than" in low
    ):
        return (
            "Hint: the network downsamples a 32x32 input to nothing; use fewer stages/strides or a smaller "
            "patch size (e.g. depths=(...) with fewer entries, patch_size=2)."
        )
    if "expected more than 1 value per channel" in low:
        return "Hint: a BatchNorm saw one value per channel in train mode; use eval() or a larger batch."
    if "size mismatch" in low or "shape" in low or "must match" in low:
        return (
            "Hint: the model's sizes are inconsistent with a 32x32 input; override img_size/patch_size/"
            "window_size or widths (embed_dim, dims) so they agree."
        )
    return "Hint: check the keyword overrides against the model's constructor, and that the model suits 32x32 inputs."
