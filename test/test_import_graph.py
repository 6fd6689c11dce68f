"""No import circle between robot_ik_nn's modules, lazy (in-function) imports included.

The graph is built with ``ast`` over every .py file of the package: each ``import`` and
``from ... import`` anywhere in a module (module level or inside a function) is an edge.
Relative imports are resolved; ``from pkg import name`` counts as importing the submodule
``pkg.name`` when that is a module; importing ``a.b.c`` also runs ``a/__init__`` and
``a/b/__init__``, so those packages are edges too, except the packages above the importing
module itself: their ``__init__`` has already run (or is running) before it, so importing through
them runs nothing new. A name taken from a package's ``__init__`` (``from .. import NAME`` where
NAME is no module) is always an edge to that ``__init__``.
"""

import ast
from pathlib import Path

PACKAGE = "robot_ik_nn"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE


def _modules(root):
    """Map module name -> (path, is_package) for every .py file of the package."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_pkg)
    return found


def _with_parents(name, modules, own):
    """``name`` (when it is a module of ours) and each package above it, less ``own``: the
    packages above the importing module, whose ``__init__`` ran before it could import."""
    parts = name.split(".")
    out = []
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if prefix in modules and prefix not in own:
            out.append(prefix)
    return out


def import_graph(root=ROOT):
    """Module -> the package's modules it imports (any import, anywhere in the file)."""
    package_name = root.name
    modules = _modules(root)
    graph = {name: set() for name in modules}

    def ours(target):
        return target == package_name or target.startswith(package_name + ".")

    for name, (path, is_pkg) in modules.items():
        package = name if is_pkg else name.rpartition(".")[0]
        parts = name.split(".")
        own = {".".join(parts[:i]) for i in range(1, len(parts))}
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if ours(alias.name):
                        graph[name].update(_with_parents(alias.name, modules, own))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    base = ".".join(base + ([node.module] if node.module else []))
                else:
                    base = node.module
                if not ours(base):
                    continue
                graph[name].update(_with_parents(base, modules, own))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    if full in modules:  # a submodule
                        graph[name].update(_with_parents(full, modules, own))
                    elif base in modules:  # a name defined in base's __init__: it must have run
                        graph[name].add(base)
        graph[name].discard(name)
    return graph


def strongly_connected(graph):
    """Tarjan's algorithm, iterative; returns the components as sorted lists."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(sorted(component))
    return out


def _describe(component, graph):
    members = set(component)
    lines = [" <-> ".join(component)]
    for name in component:
        inside = sorted(graph[name] & members)
        lines.append(f"    {name} -> {', '.join(inside)}")
    return "\n".join(lines)


def test_the_graph_sees_lazy_relative_and_parent_imports(tmp_path):
    pkg = tmp_path / "pk"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "leaf.py").write_text("X = 1\n")
    (pkg / "sub" / "rel.py").write_text("from . import leaf\n")
    (pkg / "lazy.py").write_text("def f():\n    from .sub.leaf import X\n    return X\n")
    (pkg / "plain.py").write_text("import pk.sub.leaf\nimport os\n")
    (pkg / "sub" / "up.py").write_text("from .. import lazy\nfrom . import NAME\n")
    graph = import_graph(pkg)
    # pk and pk.sub ran before pk.sub.rel: no edge to them, only to what it imports
    assert graph["pk.sub.rel"] == {"pk.sub.leaf"}
    # a name from the package's own __init__ is an edge to that __init__
    assert graph["pk.sub.up"] == {"pk.lazy", "pk.sub"}
    assert graph["pk.lazy"] == {"pk.sub", "pk.sub.leaf"}
    assert graph["pk.plain"] == {"pk.sub", "pk.sub.leaf"}
    assert graph["pk.sub.leaf"] == set()
    assert len(import_graph()) > 50


def test_finder_reports_a_planted_circle():
    planted = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [c for c in strongly_connected(planted) if len(c) > 1] == [["a", "b", "c"]]


# Circles not broken yet, each with why; the test fails if one goes (delete its line then) or if
# any other circle appears.
KNOWN: list = []


def test_no_import_circle():
    graph = import_graph()
    circles = [c for c in strongly_connected(graph) if len(c) > 1]
    for component in circles:
        print(_describe(component, graph))
    new = [c for c in circles if c not in KNOWN]
    assert not new, "import circles:\n" + "\n".join(_describe(c, graph) for c in new)
    assert sorted(circles) == sorted(KNOWN), "a known circle is gone: delete it from KNOWN"


# The layers, lowest first, as docs/layout.md draws them: a module may import its own layer and
# the layers below, never one above. A unit is a top-level module or sub-package of robot_ik_nn
# ("robot_ik_nn" itself: the public API of its __init__).
LAYERS = [
    {"arm", "tensor_file", "folder_swap", "arg_types"},  # the arm; files; shared argument types
    {"model_dir"},  # reading and writing model folders
    {"ik"},  # the solver core
    {"robot_ik_nn", "safety", "ik_service", "report", "trajectory_outcome", "evaluate"},
    {"hardware"},  # drivers, emulators, PyBullet
    {"calibration", "learn"},  # fitting a true arm; training (torch)
    {"view", "web"},  # the browser page (viser); the web export
    {"nodes"},  # ROS 2
    {"bench"},  # benchmarks, which drive everything below
    {"cli"},  # the command line
    {"train"},  # the torchrun entry
]

# Imports that run upward today (issue 43), each (importer, imported) with why; the test fails
# if one goes (delete its line then) or if any other appears.
KNOWN_UPWARD = [
    # the network's forward pass and its torch twin live in ik/ and learn/ (issue 43 item 4)
    ("robot_ik_nn.model_dir", "robot_ik_nn.ik.network_forward"),
    ("robot_ik_nn.model_dir", "robot_ik_nn.ik.onnx_layers"),
    ("robot_ik_nn.model_dir", "robot_ik_nn.learn.network"),
    ("robot_ik_nn.ik.torch_solver", "robot_ik_nn.learn.network"),
    # Solver.load serves a calibrated model folder (its joint compliance) through calibration/
    ("robot_ik_nn.ik.solver", "robot_ik_nn.calibration.served"),
    # the simulated tracker hands its rows over as calibration's Measurements
    ("robot_ik_nn.hardware.tracker", "robot_ik_nn.calibration.measurements"),
    # `view --ros` links the page to a running session through a node
    ("robot_ik_nn.view.cli", "robot_ik_nn.nodes.view_link"),
]


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(module: str) -> int:
    for i, units in enumerate(LAYERS):
        if unit(module) in units:
            return i
    raise AssertionError(f"{module}: its unit {unit(module)!r} is in no layer of LAYERS")


def upward(graph):
    """(importer, imported) for each import into a higher layer; an edge to a package whose
    submodule the same module imports too is that import's, not one more."""
    found = []
    for name in sorted(graph):
        targets = graph[name]
        for target in sorted(targets):
            if layer_of(target) <= layer_of(name):
                continue
            if any(other.startswith(target + ".") for other in targets):
                continue
            found.append((name, target))
    return found


def test_the_layers_name_every_unit_once():
    named = [u for units in LAYERS for u in units]
    assert len(named) == len(set(named))
    assert {unit(m) for m in import_graph()} == set(named)


def test_upward_finds_a_planted_import():
    planted = {
        "robot_ik_nn.arm.model": {"robot_ik_nn.nodes", "robot_ik_nn.nodes.common"},
        "robot_ik_nn.nodes.common": {"robot_ik_nn.arm.model"},
        "robot_ik_nn.ik.kernel": {"robot_ik_nn.ik.forward"},
    }
    assert upward(planted) == [("robot_ik_nn.arm.model", "robot_ik_nn.nodes.common")]


def test_no_import_runs_upward():
    found = upward(import_graph())
    new = [edge for edge in found if edge not in KNOWN_UPWARD]
    assert not new, "imports into a higher layer (docs/layout.md):\n" + "\n".join(
        f"    {a} -> {b} ({unit(a)}: layer {layer_of(a)}, {unit(b)}: layer {layer_of(b)})"
        for a, b in new
    )
    gone = [edge for edge in KNOWN_UPWARD if edge not in found]
    assert not gone, f"a known upward import is gone: delete it from KNOWN_UPWARD: {gone}"
