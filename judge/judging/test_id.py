"""A test's name, read once: `<suite>/<file>::<function>[<parameters>]`.

The runner reports a test by its node inside the suite (`test_lru.py::test_get[3]`); reports,
events and the reference's entries name it with its suite in front (`public/test_lru.py::...`);
limits and weights are set per function (the node without its parameters). `TestId` holds the
two parts and gives each of these forms, so no reader splits the string itself.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TestId:
    __test__ = False  # not a pytest test class

    suite: str   # "public" | "hidden"; "" for a bare node
    node: str    # the name inside the suite, as the runner reports it

    @classmethod
    def parse(cls, name: str) -> "TestId":
        """From a full name (`public/test_x.py::test_f[1]`); a name without a suite is a node."""
        suite, slash, node = name.partition("/")
        if not slash or "::" in suite or "[" in suite:  # the slash is in the node itself
            return cls("", name)
        return cls(suite, node)

    @property
    def name(self) -> str:
        return f"{self.suite}/{self.node}" if self.suite else self.node

    @property
    def base(self) -> str:
        """The node without its parameters: the function a limit or weight is set for."""
        return self.node.partition("[")[0]

    @property
    def base_name(self) -> str:
        """`base` with the suite in front, as problem.toml's weights name a test."""
        return f"{self.suite}/{self.base}" if self.suite else self.base

    @property
    def file(self) -> str:
        return self.node.partition("::")[0]

    @property
    def function(self) -> str:
        return self.base.partition("::")[2]

    @property
    def param(self) -> str | None:
        """What is inside the brackets of a parametrized test, else None."""
        _, bracket, rest = self.node.partition("[")
        return rest[:-1] if bracket and rest.endswith("]") else (rest if bracket else None)

    def __str__(self) -> str:
        return self.name
