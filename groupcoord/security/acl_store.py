"""The set of ACL bindings, indexed so that finding the ones that apply to a resource is a few dictionary lookups.

Literal bindings are keyed by ``(resource type, name)`` (the ``*`` literal is one such key); prefixed ones by
``(resource type, prefix)``, with the distinct prefix lengths of each type kept, so a resource name is looked up once
per length rather than compared with every prefix; the answer for a resource is remembered until the bindings
change. Only replay of the record log changes the set
(:mod:`groupcoord.coordinator.hard_state`); the authorizer and the ACL APIs read it.
"""

from __future__ import annotations

from collections.abc import Iterator

from groupcoord.security.acls import WILDCARD, AclBinding, AclFilter, PatternType, ResourceType

_Key = tuple[ResourceType, str]
_MAX_REMEMBERED = 65536


class AclStore:
    """ACL bindings, with :meth:`applying_to` as the authorizer's index."""

    def __init__(self) -> None:
        self._literal: dict[_Key, set[AclBinding]] = {}
        self._prefixed: dict[_Key, set[AclBinding]] = {}
        self._prefix_lengths: dict[ResourceType, dict[int, int]] = {}  # type -> length -> how many prefixes
        self._applying: dict[_Key, tuple[AclBinding, ...]] = {}  # applying_to's answers until the next change

    def add(self, binding: AclBinding) -> bool:
        """Store ``binding``; ``False`` when it was there already."""
        index = self._literal if binding.pattern_type == PatternType.LITERAL else self._prefixed
        key = (binding.resource_type, binding.name)
        entries = index.setdefault(key, set())
        if binding in entries:
            return False
        if not entries and index is self._prefixed:
            lengths = self._prefix_lengths.setdefault(binding.resource_type, {})
            lengths[len(binding.name)] = lengths.get(len(binding.name), 0) + 1
        entries.add(binding)
        self._applying.clear()
        return True

    def remove(self, binding: AclBinding) -> bool:
        """Forget ``binding``; ``False`` when it was not there."""
        index = self._literal if binding.pattern_type == PatternType.LITERAL else self._prefixed
        key = (binding.resource_type, binding.name)
        entries = index.get(key)
        if entries is None or binding not in entries:
            return False
        entries.discard(binding)
        self._applying.clear()
        if not entries:
            del index[key]
            if index is self._prefixed:
                lengths = self._prefix_lengths[binding.resource_type]
                lengths[len(binding.name)] -= 1
                if not lengths[len(binding.name)]:
                    del lengths[len(binding.name)]
        return True

    def applying_to(self, resource_type: ResourceType, name: str) -> tuple[AclBinding, ...]:
        """The bindings whose pattern names resource ``name`` of ``resource_type``: its literal, the ``*`` literal,
        and every prefix of it (remembered until the bindings change: a request's resources repeat)."""
        key = (resource_type, name)
        found = self._applying.get(key)
        if found is None:
            if len(self._applying) >= _MAX_REMEMBERED:
                self._applying.clear()
            found = self._applying[key] = tuple(self._find(resource_type, name))
        return found

    def _find(self, resource_type: ResourceType, name: str) -> Iterator[AclBinding]:
        literal = self._literal
        yield from literal.get((resource_type, name), ())
        if name != WILDCARD:
            yield from literal.get((resource_type, WILDCARD), ())
        lengths = self._prefix_lengths.get(resource_type)
        if lengths:
            prefixed = self._prefixed
            for length in lengths:
                if length <= len(name):
                    yield from prefixed.get((resource_type, name[:length]), ())

    def of_type(self, resource_type: ResourceType) -> Iterator[AclBinding]:
        """Every binding on resources of ``resource_type``."""
        for index in (self._literal, self._prefixed):
            for (kind, _), entries in index.items():
                if kind == resource_type:
                    yield from entries

    def matching(self, acl_filter: AclFilter) -> list[AclBinding]:
        """The bindings ``acl_filter`` matches, sorted."""
        return sorted(binding for binding in self if acl_filter.matches(binding))

    def __iter__(self) -> Iterator[AclBinding]:
        for index in (self._literal, self._prefixed):
            for entries in index.values():
                yield from entries

    def __len__(self) -> int:
        return sum(len(entries) for index in (self._literal, self._prefixed) for entries in index.values())

    def __contains__(self, binding: object) -> bool:
        if not isinstance(binding, AclBinding):
            return False
        index = self._literal if binding.pattern_type == PatternType.LITERAL else self._prefixed
        return binding in index.get((binding.resource_type, binding.name), ())
