"""Hypothesis profiles, chosen with `--profile` or the environment variable `REMAT_PROFILE`.

- `dev`: few examples (10), for a quick look while editing: derandomized, as `ci`, so that
  it is served by the example bank and draws the shapes `ci` draws, which the compilation
  caches hold already (random, it drew new shapes each run: `torch_compile` compiled them
  anew, and a warm `dev` run was slower than a warm `ci` one).
- `ci` (the default): 100 examples per property, derandomized, so a run is
  reproducible and a red CI run stays red.
- `thorough`: many random examples, on shapes of every size up to 300, for
  hunting. Its example database keeps failures, so a rerun tries them first.
- `scale`: the sharded ports (`implementations.SHARDED`: FSDP2 over gloo
  ranks, JAX SPMD over forced host devices), which every other profile leaves
  out unless named: 20 examples per property, derandomized, and only their
  own mutants. Their rank processes and devices cost start-ups that the
  default run's budget has no room for. `REMAT_SCALE_NODES=2` (read by the
  ports in their workers) runs them across processes of this machine: two
  torchrun nodes, two `jax.distributed` processes (docs/SCALE.md).

Each profile also sets the longest one example may take before its worker is
stopped (`--timeout` overrides it). The first example of a property on a
new shape includes tracing and compiling: about a second for a JAX port,
20 to 60 seconds for `torch.compile` on two loaded cores; the defaults leave
room for that.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

import implementations

ENV_VAR = "REMAT_PROFILE"
DEFAULT = "ci"
PROFILES = ("dev", "ci", "thorough", "scale")
#: The profile that runs the sharded ports (and the only one that does unless they are named).
SCALE = "scale"
#: Seconds one example may take, per profile.
TIMEOUTS = {"dev": 120.0, "ci": 120.0, "thorough": 300.0, "scale": 120.0}
#: Profiles whose random examples are worth keeping in the example database.
KEEPS_EXAMPLES = frozenset({"thorough"})

# Examples draw arrays of up to a few hundred floats and each runs several
# compiled functions; Hypothesis's timing checks would flag that as "slow".
# The parent is Hypothesis's own "default" profile, not whatever profile is
# active: where a CI variable is set (`CI`, `GITHUB_ACTIONS`, ...) Hypothesis
# loads its "ci" profile on import, and a profile registered on top of it
# would inherit `derandomize=True`, so `thorough` would no longer be random in CI.
_common = dict(
    parent=settings.get_profile("default"),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("dev", max_examples=10, derandomize=True, **_common)
settings.register_profile("ci", max_examples=100, derandomize=True, **_common)
settings.register_profile("thorough", max_examples=1000, **_common)
settings.register_profile("scale", max_examples=20, derandomize=True, **_common)


def load(name: str | None = None) -> str:
    """Activate the named profile (default: `$REMAT_PROFILE`, else "ci"); return its name."""
    name = name or os.environ.get(ENV_VAR) or DEFAULT
    if name not in PROFILES:
        raise ValueError(f"{ENV_VAR}={name!r}: the profile must be one of {', '.join(PROFILES)}")
    settings.load_profile(name)
    return name


def default_ports(profile: str, registered) -> list[str]:
    """The ports a run checks when none is named: the sharded ones under `scale`, the others
    under every other profile."""
    sharded = profile == SCALE
    return [name for name in registered if (name in implementations.SHARDED) == sharded]
