"""The game graph: rooms, agents and objects as nodes, each inside exactly one other node.

This is the mutable state the verbs of :mod:`zoo.light.actions` read and change; it knows
nothing of rules. Sizes and capacities follow the 2019 collection engine (docs/light_data.md §7a): objects
have size 1 (containers hold 3), agents size 20 and capacity 20, rooms capacity 2000.

Names are what commands use (``get brush``, ``give brush to worker``), so within one graph
every node name is unique, compared case-insensitively; the original casing is kept because
the release's action strings keep it (``remove A quiver``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from zoo.light.world import article_name

OBJECT_SIZE = 1
CONTAINER_CAPACITY = 3
AGENT_SIZE = 20
AGENT_CAPACITY = 20
AGENT_HEALTH = 10
ROOM_CAPACITY = 2000


@dataclass
class Node:
    """One thing in the world. ``kind`` is ``room``, ``agent`` or ``object``.

    ``parent`` is the id of the node holding this one (None for rooms). ``equipped`` is
    ``wear`` or ``wield`` for an object a holder has put on, else None. Agents carry
    ``health`` and the ``attack``/``defense`` stats equipment adds.
    """

    id: str
    kind: str
    name: str
    description: str = ""
    parent: str | None = None
    contents: list[str] = field(default_factory=list)
    classes: frozenset[str] = frozenset()
    size: int = OBJECT_SIZE
    capacity: int = 0
    equipped: str | None = None
    surface: str = "in"
    persona: str = ""
    category: str = ""
    health: int = AGENT_HEALTH
    attack: int = 0
    defense: int = 0
    dead: bool = False
    locked: bool = False

    def is_a(self, cls: str) -> bool:
        return cls in self.classes

    @property
    def is_agent(self) -> bool:
        return self.kind == "agent"

    @property
    def is_object(self) -> bool:
        return self.kind == "object"


class GraphError(ValueError):
    """A node cannot be added (duplicate name, unknown parent)."""


class GameGraph:
    """Nodes and their containment. Lookups by id or by (case-insensitive) name."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self._names: dict[str, str] = {}
        self._counter = 0

    # ------------------------------------------------------------------ building
    def _add(self, node: Node, parent: str | None) -> Node:
        key = node.name.lower()
        if not node.name.strip():
            raise GraphError("a node needs a name")
        if key in self._names:
            raise GraphError(f"a node named {node.name!r} already exists")
        if parent is not None and parent not in self.nodes:
            raise GraphError(f"unknown parent node {parent!r}")
        self.nodes[node.id] = node
        self._names[key] = node.id
        if parent is not None:
            node.parent = parent
            self.nodes[parent].contents.append(node.id)
        return node

    def _new_id(self, kind: str) -> str:
        self._counter += 1
        return f"{kind}_{self._counter}"

    def has_name(self, name: str) -> bool:
        return name.lower() in self._names

    def add_room(self, name: str, description: str = "", category: str = "") -> Node:
        return self._add(Node(self._new_id("room"), "room", name, description, capacity=ROOM_CAPACITY,
                              size=0, category=category), None)

    def add_agent(self, name: str, room: str, persona: str = "", description: str = "",
                  health: int = AGENT_HEALTH) -> Node:
        return self._add(Node(self._new_id("agent"), "agent", name, description, size=AGENT_SIZE,
                              capacity=AGENT_CAPACITY, persona=persona, health=health), self.resolve(room).id)

    def add_object(self, name: str, parent: str, description: str = "", classes: frozenset[str] = frozenset(),
                   equipped: str | None = None, surface: bool = False) -> Node:
        container = "container" in classes
        node = Node(self._new_id("object"), "object", name, description, classes=frozenset(classes),
                    capacity=CONTAINER_CAPACITY if container else 0, surface="on" if surface else "in")
        self._add(node, self.resolve(parent).id)
        if equipped is not None:
            self.equip(node.id, equipped)
        return node

    # ------------------------------------------------------------------ lookups
    def resolve(self, key: str) -> Node:
        """The node with id or name ``key``; ``KeyError`` if none."""
        if key in self.nodes:
            return self.nodes[key]
        node_id = self._names.get(key.lower())
        if node_id is None:
            raise KeyError(key)
        return self.nodes[node_id]

    def find(self, name: str) -> Node | None:
        node_id = self._names.get(name.strip().lower())
        return None if node_id is None else self.nodes[node_id]

    def parent(self, node: Node) -> Node | None:
        return None if node.parent is None else self.nodes[node.parent]

    def room_of(self, node: Node) -> Node:
        """The room a node is in, through any chain of holders."""
        while node.kind != "room":
            node = self.nodes[node.parent]  # type: ignore[index]
        return node

    def children(self, node: Node) -> list[Node]:
        return [self.nodes[i] for i in node.contents]

    def descendants(self, node: Node) -> Iterator[Node]:
        for child in self.children(node):
            yield child
            yield from self.descendants(child)

    def is_inside(self, node: Node, ancestor: Node) -> bool:
        """True when ``node`` is held, at any depth, by ``ancestor``."""
        while node.parent is not None:
            if node.parent == ancestor.id:
                return True
            node = self.nodes[node.parent]
        return False

    def agents_in(self, room: Node) -> list[Node]:
        return [n for n in self.children(room) if n.is_agent and not n.dead]

    def used_capacity(self, holder: Node) -> int:
        return sum(self.nodes[i].size for i in holder.contents)

    def fits(self, thing: Node, holder: Node) -> bool:
        """Whether ``thing`` fits in ``holder``'s remaining capacity (already inside: always)."""
        if thing.parent == holder.id:
            return True
        return self.used_capacity(holder) + thing.size <= holder.capacity

    # ------------------------------------------------------------------ changes
    def move(self, node_id: str, new_parent: str) -> None:
        node = self.nodes[node_id]
        if node.parent is not None:
            self.nodes[node.parent].contents.remove(node_id)
        node.parent = new_parent
        self.nodes[new_parent].contents.append(node_id)

    def delete(self, node_id: str) -> None:
        """Remove a node and everything inside it (eaten food, a drained drink)."""
        node = self.nodes[node_id]
        for child in list(node.contents):
            self.delete(child)
        if node.parent is not None:
            self.nodes[node.parent].contents.remove(node_id)
        del self._names[node.name.lower()]
        del self.nodes[node_id]

    def equip(self, node_id: str, slot: str) -> None:
        """Mark an object worn or wielded and add its stats to its holder (docs/light_data.md §7a: weapons
        give attack 1, wearables defence 1)."""
        node = self.nodes[node_id]
        node.equipped = slot
        holder = self.nodes[node.parent]  # type: ignore[index]
        if holder.is_agent:
            if slot == "wield":
                holder.attack += 1
            else:
                holder.defense += 1

    def unequip(self, node_id: str) -> None:
        node = self.nodes[node_id]
        holder = self.nodes[node.parent]  # type: ignore[index]
        if holder.is_agent and node.equipped is not None:
            if node.equipped == "wield":
                holder.attack -= 1
            else:
                holder.defense -= 1
        node.equipped = None

    # ------------------------------------------------------------------ release views
    def inventory(self, agent: Node) -> tuple[list[str], list[str], list[str]]:
        """(carrying, wearing, wielding) as the release writes them: article-prefixed names."""
        carrying, wearing, wielding = [], [], []
        for item in self.children(agent):
            target = wearing if item.equipped == "wear" else wielding if item.equipped == "wield" else carrying
            target.append(article_name(item.name))
        return carrying, wearing, wielding

    def room_objects(self, room: Node) -> list[str]:
        """Objects lying in the room (top level), article-prefixed."""
        return [article_name(n.name) for n in self.children(room) if n.is_object]
