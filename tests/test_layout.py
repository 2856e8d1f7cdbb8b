"""The layout shows the architecture: the domains (``zoo/light``, ``zoo/blocks``) never import
the models or what joins domains to models (the registry, callbacks, CLI, games, training
scripts), not even inside a function; the joining packages import, and ``zoo --help`` still
offers every command, without loading torch."""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOMAINS = ("zoo/light", "zoo/blocks")
FORBIDDEN = ("zoo.models", "zoo.registry", "zoo.factory", "zoo.loading", "zoo.callbacks", "zoo.cli", "zoo.play", "zoo.training")
JOINING = ("zoo/cli", "zoo/training")

SUBCOMMANDS = {
    (): {"eval", "models", "download", "blocks", "light", "play", "demo", "train"},
    ("eval",): {"blocks", "light"},
    ("blocks",): {"render"},
    ("light",): {"sim", "stats", "neighbors", "generate", "examples"},
    ("play",): {"light", "blocks"},
}
"""What ``zoo --help`` and each group's ``--help`` offer (``train`` runs the packaged recipes)."""

LEAVES = [("eval", "blocks"), ("eval", "light"), ("models",), ("download",), ("blocks", "render"),
          ("light", "sim"), ("light", "stats"), ("light", "neighbors"), ("light", "generate"),
          ("light", "examples"), ("play", "light"), ("play", "blocks"), ("demo",), ("train",)]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every import in ``source``, at any depth (functions, ``if TYPE_CHECKING``,
    ``try``), relative ones resolved against ``module``; ``from a import b`` names both ``a``
    and ``a.b`` (``b`` may be a submodule). String constants that are exactly a dotted ``zoo.``
    module name count too: they are what ``importlib.import_module`` is given."""
    found = []
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and re.fullmatch(r"zoo(\.\w+)+", node.value):
            found.append((node.lineno, node.value))
    return found


def forbidden_imports(path: Path) -> list[str]:
    names = imported_names(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")
    return [f"{path.relative_to(REPO)}:{line} imports {name}" for line, name in names
            if any(name == banned or name.startswith(banned + ".") for banned in FORBIDDEN)]


def domain_files() -> list[Path]:
    return sorted(path for domain in DOMAINS for path in (REPO / domain).rglob("*.py"))


def test_the_checker_sees_imports_at_every_depth():
    source = """
import zoo.registry
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from zoo.models.starspace import StarSpaceRanker
def load():
    from zoo import callbacks
    from ..cli import light
    try:
        import zoo.play.demo as demo
    except ImportError:
        pass
    class Inner:
        def method(self):
            from zoo.training.light import run
    return importlib.import_module("zoo.models.ensemble")
"""
    names = {name for _, name in imported_names(source, "zoo.light.example")}
    flagged = {name for name in names if any(name == b or name.startswith(b + ".") for b in FORBIDDEN)}
    assert flagged == {"zoo.registry", "zoo.models.starspace", "zoo.models.starspace.StarSpaceRanker",
                       "zoo.callbacks", "zoo.cli", "zoo.cli.light", "zoo.play.demo", "zoo.training.light",
                       "zoo.training.light.run", "zoo.models.ensemble"}
    assert {"typing", "typing.TYPE_CHECKING", "zoo"} == names - flagged
    assert {name for _, name in imported_names("from . import records\nfrom .sim import X", "zoo.light",
                                               is_package=True)} == {"zoo.light", "zoo.light.records",
                                                                     "zoo.light.sim", "zoo.light.sim.X"}


def test_domains_import_neither_models_nor_what_joins_them():
    files = domain_files()
    assert len(files) > 40 and REPO / "zoo/light/datamodule.py" in files and REPO / "zoo/blocks/env.py" in files
    every_import = [name for path in files for _, name in imported_names(path.read_text(encoding="utf-8"),
                                                                          module_name(path))]
    assert "zoo.light.records" in every_import and "zoo.blocks.data" in every_import  # the walk sees imports
    problems = [problem for path in files for problem in forbidden_imports(path)]
    assert problems == [], "\n".join(problems)


def import_graph(root: Path = REPO, package: str = "zoo") -> dict[str, set[str]]:
    """Every module of ``package`` (under ``root``) -> the modules of ``package`` it imports, at any
    depth (:func:`imported_names`), each name resolved to the module it lives in
    (``zoo.light.sim.SimConfig`` -> ``zoo.light.sim``). Only the imports written count: the parent
    packages Python runs first are no edge, or every module would sit in a circle with its package;
    so ``from zoo.light.sim import speech`` is an edge to ``zoo.light.sim.speech`` alone."""
    files = sorted((root / package).rglob("*.py"))
    names = {".".join(path.relative_to(root).with_suffix("").parts[:-1] if path.name == "__init__.py"
                      else path.relative_to(root).with_suffix("").parts): path for path in files}

    def owner(name: str) -> str | None:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, path in names.items():
        found = imported_names(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
        by_line: dict[int, set[str]] = {}
        for line, name in found:
            by_line.setdefault(line, set()).add(name)
        targets = set()
        for line_names in by_line.values():
            for name in line_names:
                if name in names and any(other.startswith(name + ".") and other in names for other in line_names):
                    continue  # the ``a`` of ``from a import b`` with ``b`` a module: a parent package
                targets.add(owner(name))
        graph[module] = targets - {None, module}
    return graph


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_import_graph_resolves_names_and_sees_imports_in_functions(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.a import f\nfrom pkg import sub\n")
    (tmp_path / "pkg" / "a.py").write_text("import os\ndef f():\n    from pkg.sub import value\n    return value\n")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("from .deep import thing as value\n")
    (tmp_path / "pkg" / "sub" / "deep.py").write_text("thing = 1\n")
    assert import_graph(tmp_path, "pkg") == {"pkg": {"pkg.a", "pkg.sub"}, "pkg.a": {"pkg.sub"}, "pkg.sub": {"pkg.sub.deep"},
                                             "pkg.sub.deep": set()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle of ``graph``: its strongly connected components of two modules or more
    (Tarjan's algorithm), each sorted, plus any module that imports itself."""
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                lowest[module] = min(lowest[module], lowest[target])
            elif target in stack:
                lowest[module] = min(lowest[module], index[target])
        if lowest[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1 or module in graph.get(module, ()):
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_the_cycle_finder_names_every_module_of_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert import_cycles(graph) == [["a", "b", "c"], ["e"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_zoo_imports_in_no_circle():
    """The whole package, imports in functions included: no module reaches itself again. (The
    registry imports no model; the factory, zoo.factory, imports the models and the registry;
    zoo.grounded is told its class lookup instead of importing one.)"""
    graph = import_graph()
    assert {"zoo", "zoo.registry", "zoo.factory", "zoo.loading", "zoo.grounded", "zoo.hub", "zoo.models"} <= set(graph)
    assert "zoo.models" in graph["zoo.factory"] and "zoo.registry" in graph["zoo.models.bi_ranker"]
    cycles = import_cycles(graph)
    assert cycles == [], "import circles:\n" + "\n".join(" <-> ".join(cycle) for cycle in cycles)


def test_the_registry_and_the_interface_import_nothing_above_the_core():
    graph = import_graph()
    above = ("zoo.models", "zoo.factory", "zoo.loading", "zoo.training", "zoo.callbacks", "zoo.cli", "zoo.play", "zoo.light",
             "zoo.blocks")
    for module in ("zoo.registry", "zoo.grounded", "zoo.hub"):
        upward = sorted(target for target in graph[module] if any(within(target, floor) for floor in above))
        assert upward == [], f"{module} imports {upward}"
    assert "zoo" not in graph["zoo.hub"]


def test_the_interface_is_told_how_to_look_classes_up():
    """zoo.grounded alone knows no model class; the registry installs its table, and the factory
    (``from zoo import Grounded`` goes through it) one that imports every model family first."""
    probe = ("import zoo.grounded as g; print(g._class_lookup); import zoo.registry; "
             "print(g._class_lookup.__module__); from zoo import Grounded; print(g._class_lookup.__module__)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    completed = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split() == ["None", "zoo.registry", "zoo.factory"]


def test_light_sim_builds_on_zoo_light_and_zoo_light_never_imports_it():
    """LIGHT-sim (zoo.light.sim) reads the world, the records and the release layout from zoo.light;
    zoo.light (the data module included: it is handed a generated corpus) imports nothing of it,
    and the simulator imports no model."""
    graph = import_graph()
    light = sorted(module for module in graph if within(module, "zoo.light") and not within(module, "zoo.light.sim"))
    sim = sorted(module for module in graph if within(module, "zoo.light.sim"))
    assert {"zoo.light", "zoo.light.datamodule", "zoo.light.corpus_dir"} <= set(light)
    assert {"zoo.light.sim", "zoo.light.sim.config", "zoo.light.sim.store", "zoo.light.sim.line_writer"} <= set(sim)
    assert {"zoo.light.records", "zoo.light.world"} <= graph["zoo.light.sim.chat"]  # the walk sees imports
    upward = [f"{module} imports {target}" for module in light for target in sorted(graph[module])
              if within(target, "zoo.light.sim")]
    assert upward == [], "\n".join(upward)
    models = [f"{module} imports {target}" for module in sim for target in sorted(graph[module])
              if within(target, "zoo.models")]
    assert models == [], "\n".join(models)


def test_no_light_sim_module_shadows_a_name_the_package_exports():
    """``import zoo.light.sim.X`` sets the package's attribute ``X`` to the module: a module named
    like one of ``zoo.light.sim.__all__`` would replace that name for everyone after the import."""
    sim = importlib.import_module("zoo.light.sim")
    modules = {path.stem for path in (REPO / "zoo/light/sim").glob("*.py")} - {"__init__"}
    assert {"config", "store", "line_writer"} <= modules and "llm_writer" in sim.__all__
    assert modules & set(sim.__all__) == set()


def test_cli_and_training_modules_all_import():
    names = sorted(module_name(path) for package in JOINING for path in (REPO / package).rglob("*.py"))
    assert {"zoo.cli", "zoo.cli.__main__", "zoo.cli.blocks", "zoo.cli.light", "zoo.cli.light_corpus", "zoo.cli.light_eval",
            "zoo.cli.light_generate", "zoo.cli.light_neighbors", "zoo.cli.play", "zoo.cli.train", "zoo.training.runner", "zoo.training.stage", "zoo.training",
            "zoo.training.light", "zoo.training.blocks"} <= set(names)
    for name in names:
        module = importlib.import_module(name)
        assert Path(module.__file__).resolve().is_relative_to(REPO), f"{name} came from {module.__file__}"
    for name in ("zoo.cli.blocks", "zoo.cli.light", "zoo.cli.play", "zoo.cli.train"):
        assert callable(importlib.import_module(name).add_commands)
    assert set(importlib.import_module("zoo.cli").COMMAND_MODULES) == {"zoo.cli.blocks", "zoo.cli.light",
                                                                       "zoo.cli.play", "zoo.cli.train"}


def zoo(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "zoo.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


def offered(help_text: str) -> set[str]:
    """The subcommands a help text offers: the ``{a,b,c}`` of its positional arguments."""
    positional = help_text.split("positional arguments:", 1)[1]
    return set(re.search(r"\{([\w,-]+)\}", positional).group(1).split(","))


@pytest.mark.parametrize("group", sorted(SUBCOMMANDS))
def test_zoo_help_lists_every_subcommand(group):
    completed = zoo(*group, "--help")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith(f"usage: {' '.join(('zoo', *group))} ")
    assert offered(completed.stdout) == SUBCOMMANDS[group]


def test_every_leaf_command_has_its_help(capsys):
    from zoo.cli import build_parser

    assert {leaf[0] for leaf in LEAVES} | {group[0] for group in SUBCOMMANDS if group} == SUBCOMMANDS[()]
    for leaf in LEAVES:
        with pytest.raises(SystemExit) as stopped:
            build_parser().parse_args([*leaf, "--help"])
        assert stopped.value.code == 0
        text = capsys.readouterr().out
        assert text.startswith(f"usage: zoo {' '.join(leaf)}"), text[:200]
        assert "options:" in text


def test_help_loads_neither_torch_nor_the_models():
    probe = ("import sys; from zoo.cli import build_parser; build_parser(); "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'lightning', 'transformers') "
             "or m.startswith(('zoo.models', 'zoo.registry', 'zoo.factory', 'zoo.training', 'zoo.callbacks'))))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    completed = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True,
                               timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"
