"""The conformance suite on every registered port, through the pytest plugin.

Ids read `test_property[<port>-<property>]`: `pytest -k torch` checks the
torch port, `pytest -k evidence` the evidence property on every port.
"""

from conformance.pytest_plugin import test_property  # noqa: F401
