"""Hypothesis profile for the property suite: deterministic (derandomized,
no example database), no per-example deadline (CI machines vary).

The profile is registered here and applied by each property test through
`ripple_strategies.prop(n)` (the profile plus that test's `max_examples`),
rather than loaded globally, so that hypothesis tests elsewhere in the tree
behave the same whether or not this folder is collected.  The sizes keep
the whole suite well under a minute; RIPPLE_HYPOTHESIS_SCALE=10 runs ten
times as many examples, still derandomized.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ripple-property",
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=False,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
