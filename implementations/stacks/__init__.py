"""The stacks: one folder per framework, holding everything the project knows about it.

Each folder `implementations/stacks/<framework>/` holds:

- `manifest.py`: what the core needs to know without importing the framework
  (`implementations.manifests`): its ports, extras, engine, load order,
  profiles, compare's lanes, bench stacks, mutants, policy expectations,
  device probe, compilation caches and CI job;
- its ports (one module each, named for the port) and what they share: the
  `Stack` (arrays to and from numpy, the precision pin and its report,
  Flax's init in that framework, the evidence instrument behind one
  `record(...)`) and a port base (`implementations.stacks.jax.JaxPort`);
- its bench stack(s), mutants (`<port>_mutants.py`), `expectations.py`
  (`implementations.expectations`) and, where it reads devices or keeps a
  compilation cache, `devices.py` and `caches.py`.

`numpy` holds Flax linen's init in numpy, which every stack without JAX
uses. `base` defines `Stack` and `Port`, the base of every port; `lazy`,
`pool`, `switch`, `hlo`, `hooks_evidence`, `load_order`, `native_stderr` and `value_labels` are
pieces several stacks share.

Importing this package, a stack's package or its `manifest` imports no ML
framework: a stack's package names its pieces and imports each on first use
(`lazy`); importing one of its modules imports the framework.
"""

import pkgutil

from .base import Port, Stack

#: The stack folders.
NAMES = tuple(info.name for info in pkgutil.iter_modules(__path__) if info.ispkg)

__all__ = ["NAMES", "Port", "Stack"]
