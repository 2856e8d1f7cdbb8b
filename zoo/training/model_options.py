"""A recipe's ``model: {name, options}``: the registered class and its options, checked
against the class's constructor before any data is read (a typo names the closest argument
instead of failing after the data has loaded). Both runners build their models from it."""

from __future__ import annotations

import difflib

from omegaconf import DictConfig, OmegaConf

from zoo.factory import model_spec
from zoo.registry import ModelSpec


def model_options(config: DictConfig) -> tuple[ModelSpec, dict]:
    """The spec registered as ``model.name`` and ``model.options`` as a plain dict, every option
    a constructor argument of that class (SystemExit with one line otherwise)."""
    options = OmegaConf.to_container(config.model.options, resolve=True) if config.model.get("options") else {}
    try:
        spec = model_spec(config.model.name)
    except KeyError as error:
        raise SystemExit(f"model.name: {error.args[0]}") from None
    accepted = spec.cls.config_keys()
    for key in options:
        if accepted is not None and key not in accepted:
            close = difflib.get_close_matches(key, sorted(accepted), n=1)
            hint = f"; did you mean 'model.options.{close[0]}'?" if close else ""
            raise SystemExit(f"unknown config key 'model.options.{key}': {config.model.name} takes no such option{hint}")
    return spec, options
