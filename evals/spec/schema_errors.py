"""Pydantic's refusal -> one line naming the key (``model.concurrency must be an integer >= 1,
got 0``), the form every error of the harness takes.

Why a module: the schemas (``evals.spec.schema``) say what may be held; this says, in one line a
person can act on, what was wrong and where, whatever nesting pydantic reports it at.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

_Schema = typing.TypeVar("_Schema", bound=BaseModel)


def as_plain(value: Any) -> Any:
    """A DictConfig/ListConfig (or plain data) as plain dicts and lists, resolved."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, (DictConfig, ListConfig)):
            return OmegaConf.to_container(value, resolve=True)
    except ImportError:  # pragma: no cover - hydra is a harness dependency
        pass
    return value


def validated(schema: type[_Schema], value: Any, where: tuple[str, ...]) -> _Schema:
    """``value`` checked against ``schema``; ``ValueError`` with one line if it does not fit.
    ``where`` is the key path of ``value`` in the composed config (``()`` for the whole)."""
    value = as_plain(value)
    if value is None:
        value = {}
    if not isinstance(value, Mapping):  # a config error (one line, exit 2), not a TypeError
        raise ValueError(f"{_dotted(where) or 'config'} must be a mapping, "  # noqa: TRY004
                         f"got {type(value).__name__}")
    try:
        return schema.model_validate(dict(value))
    except ValidationError as exc:
        raise ValueError(_one_line(schema, exc, where)) from None


def _dotted(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _group_name(loc: tuple[Any, ...]) -> str:
    if not loc:
        return "eval config"
    return f"{loc[0]} config" if len(loc) == 1 else _dotted(loc)


def _field_type(schema: type[BaseModel], loc: Sequence[Any]) -> tuple[Any, list[Any]]:
    """The declared type at ``loc`` inside ``schema`` and its constraints (``Ge`` ...);
    ``(None, [])`` where ``loc`` leaves the schemas."""
    annotation: Any = schema
    metadata: list[Any] = []
    for part in loc:
        if isinstance(part, int):  # an item of list[X]: X
            annotation, metadata = next(iter(_type_args(annotation)), None), []
            continue
        model = _model_in(annotation)
        if model is None or part not in model.model_fields:
            return None, []
        info = model.model_fields[part]
        annotation, metadata = info.annotation, list(info.metadata)
    return annotation, metadata


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The schema in ``annotation`` (itself, or a member of ``X | None``), if any."""
    return next((a for a in (annotation, *_type_args(annotation))
                 if isinstance(a, type) and issubclass(a, BaseModel)), None)


def _type_args(annotation: Any) -> tuple[Any, ...]:
    """Every type nested in ``annotation`` (union members, Annotated's base, list items)."""
    out: list[Any] = []
    for arg in typing.get_args(annotation):
        if isinstance(arg, type) or typing.get_args(arg):
            out += [arg, *_type_args(arg)]
    return tuple(out)


def _minimum(annotation: Any, metadata: list[Any]) -> Any:
    """The ``ge`` bound declared for an integer field (0 if none)."""
    found = list(metadata)
    for arg in (annotation, *_type_args(annotation)):
        for meta in getattr(arg, "__metadata__", ()):
            found += getattr(meta, "metadata", [meta])
    return next((b.ge for b in found if getattr(b, "ge", None) is not None), 0)


def _one_line(schema: type[BaseModel], exc: ValidationError, where: tuple[str, ...]) -> str:
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = tuple(first["loc"])
    kind = first["type"]
    got = first.get("input")
    ctx = first.get("ctx") or {}
    if kind == "extra_forbidden":
        parent = loc[:-1]
        unknown = sorted(str(e["loc"][-1]) for e in errors
                         if e["type"] == "extra_forbidden" and tuple(e["loc"][:-1]) == parent)
        model = _model_in(_field_type(schema, parent)[0])
        allowed = sorted(model.model_fields) if model is not None else []
        return (f"{_group_name(where + parent)} has unknown key(s) {unknown}; "
                f"allowed: {allowed}")
    if kind == "value_error":
        return str(ctx.get("error", first["msg"]))
    # a union (`ChoiceConfig | Text`) reports each member: the key is the part before it
    while loc and isinstance(loc[-1], str) and _field_type(schema, loc)[0] is None:
        loc = loc[:-1]
    annotation, metadata = _field_type(schema, loc)
    name = _dotted(where + loc)
    types = {a for a in (annotation, *_type_args(annotation)) if isinstance(a, type)}
    if kind == "missing":
        got = None
    if str in types and (kind.startswith("string") or kind == "missing"):
        return f"{name} must be a non-empty string, got {got!r}"
    if int in types and (kind.startswith(("int", "greater_than")) or kind == "missing"):
        minimum = ctx.get("ge", _minimum(annotation, metadata))
        return f"{name} must be an integer >= {minimum}, got {got!r}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"{name} must be a finite number, got {got!r}"
    if kind == "greater_than":
        return f"{name} must be > {ctx.get('gt'):g}, got {got!r}"
    if kind == "greater_than_equal":
        return f"{name} must be >= {ctx.get('ge'):g}, got {got!r}"
    if kind == "bool_type":
        return f"{name} must be true or false, got {got!r}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"{name} must be a mapping, got {type(got).__name__}"
    if kind in ("list_type", "tuple_type"):
        return f"{name} must be a list, got {got!r}"
    if kind == "literal_error":
        return f"{name} must be one of {ctx.get('expected')} (or null), got {got!r}"
    if kind == "missing":
        return f"{name} is missing"
    return f"{name}: {first['msg']}, got {got!r}"
