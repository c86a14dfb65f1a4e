"""Models from rows a store validated on the way in, for every backend."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of `cls` holding `values` (every field, already of its
    type), without validation: for rows the store validated on the way in,
    where validating them again on every read (CleanStr, the arguments
    regex, parsing times) was most of the cost of loading a long window.
    What `model_construct` does for a model with no aliases, defaults to
    fill, extras or private attributes, at a fifth of its cost; a test
    checks the result equals the validated model."""
    instance = cls.__new__(cls)
    _set(instance, "__dict__", values)
    _set(instance, "__pydantic_fields_set__", set(values))
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance
