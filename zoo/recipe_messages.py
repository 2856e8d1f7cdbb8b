"""A pydantic error as the recipe schema's one line: the dotted key, what it must be, what it was
(``config key 'data.batch_size' must be an integer >= 1, got 0``)."""

from __future__ import annotations

from typing import Annotated, Any, get_args

from pydantic import BaseModel, TypeAdapter


def explain(error: dict, schema: type[BaseModel], data: dict) -> str:
    """One line for one pydantic error: the dotted key, what it must be, what it was."""
    fields, value, leaf = _walk(error["loc"], schema, data)
    key = ".".join(map(str, fields))
    got = f", got {value!r}"
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown config key {key!r} (python RECIPE --help lists them)"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return f"config key '{key}.name' must be one of {error['ctx']['expected_tags']}, got {value.get('name')!r}"
    if kind == "missing":
        return f"config key {key!r} is missing"
    if leaf is None:
        return f"config key {key!r}: {error['msg']}{got}"
    return f"config key {key!r} must be {describe(leaf)}{got}"


def _walk(loc: tuple, schema: type[BaseModel], data: Any):
    """(the config keys along ``loc``, the value there, the leaf field's FieldInfo or None).

    ``loc`` holds pydantic's union tags between the keys (a discriminated union's member, or
    ``int``/``dict[...]`` inside a leaf); the walk stops at the first field that is not a section."""
    fields, model, value, leaf = [], schema, data, None
    parts = list(loc)
    while parts and model is not None:
        part = parts.pop(0)
        if part not in model.model_fields:
            if isinstance(value, dict) and part in value:  # an extra key
                fields.append(part)
                value = value[part]
            break
        info = model.model_fields[part]
        name = info.alias or part
        fields.append(name)
        value = value.get(name) if isinstance(value, dict) else None
        member = _section_of(info.annotation, value)
        if member is None:
            leaf = info
            break
        model = member
        if parts and parts[0] not in member.model_fields and _is_union(info.annotation):
            parts.pop(0)  # the discriminated union's tag
    return fields, value, leaf


def _is_union(annotation) -> bool:
    return len([arg for arg in get_args(annotation) if isinstance(arg, type) and issubclass(arg, BaseModel)]) > 1 \
        or any(_is_union(arg) for arg in get_args(annotation))


def _section_of(annotation, value) -> type[BaseModel] | None:
    """The section class an annotation names (the discriminated member ``value`` picks), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    members = []
    for arg in get_args(annotation):
        found = _section_of(arg, value)
        if found is not None:
            members.append(found)
    if len(members) > 1 and isinstance(value, dict):
        for member in members:
            tag = member.model_fields.get("name")
            if tag is not None and value.get("name") in get_args(tag.annotation):
                return member
    return members[0] if members else None


def describe(field) -> str:
    """What a field accepts, in words: ``an integer >= 1``, ``one of 'cls', 'mean'`` ..."""
    annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    return _words(TypeAdapter(annotation).json_schema())


def _words(schema: dict) -> str:
    if "anyOf" in schema:
        parts = [_words(option) for option in schema["anyOf"]]
        return ", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else parts[0]
    if schema.get("type") == "array":
        inner = _words(schema.get("items", {}))
        return "a list of " + {"an integer": "integers", "a string": "strings"}.get(inner, f"({inner})")
    if "enum" in schema or "const" in schema:
        choices = schema.get("enum", [schema.get("const")])
        return f"{choices[0]!r}" if len(choices) == 1 else "one of " + ", ".join(repr(c) for c in choices)
    kind = schema.get("type")
    if kind == "null":
        return "null"
    if kind == "boolean":
        return "true or false"
    if kind == "string":
        return "a string"
    if kind == "object":
        keys = schema.get("propertyNames", {}).get("enum")
        values = schema.get("additionalProperties")  # a schema, or True (anything) for dict[str, Any]
        inner = _words(values) if isinstance(values, dict) and values else "values"
        inner = f"({inner})" if " or " in inner else inner
        return f"a mapping of {', '.join(keys)} to {inner}" if keys else f"a mapping to {inner}"
    if kind in ("integer", "number"):
        noun = "an integer" if kind == "integer" else "a number"
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        if "minimum" in schema and "maximum" in schema:
            return f"{noun} between {low} and {high}"
        bounds = [f"{'>' if 'exclusiveMinimum' in schema else '>='} {low}"] if low is not None else []
        bounds += [f"{'<' if 'exclusiveMaximum' in schema else '<='} {high}"] if high is not None else []
        return f"{noun} {' and '.join(bounds)}" if bounds else {"an integer": noun, "a number": "a finite number"}[noun]
    return "a valid value"
