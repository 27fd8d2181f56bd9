"""A tiny calculator: the demo seed for lazyagent-oci.

`add` is broken on purpose (it subtracts); the agent's job is to fix it
without touching the tests.
"""


def add(a: float, b: float) -> float:
    """Return the sum of a and b."""
    return a - b


def subtract(a: float, b: float) -> float:
    """Return a minus b."""
    return a - b


def multiply(a: float, b: float) -> float:
    """Return the product of a and b."""
    return a * b
