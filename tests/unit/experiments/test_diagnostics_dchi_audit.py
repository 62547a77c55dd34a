"""The empirical DP audit catches an under-noised d_chi M_rep on the real packaged MiniLM token table (d = 384).

tests/unit/attacks/test_dp_audit.py checks this on a small random table; here the table is the real one, where d_chi's privacy
loss concentrates far below its worst case ``eta d(x, x')``, so the audit's lower bound for the sound mechanism is
a small fraction of the claim and a mechanism must be under-noised by a large factor to be caught
(docs/design/dp-instance-encoding.md). Seeded: every verdict is deterministic.
"""

import pytest

from privnlu.attacks.privacy_audit.mechanism import audit_dchi, max_certifiable_epsilon, pick_pairs
from privnlu.mechanisms.dchi import load_token_space, m_rep
from privnlu.rng import SecretGenerator

pytestmark = pytest.mark.slow

ETA, DRAWS = 5.0, 20_000


def test_under_noised_m_rep_is_caught_and_the_real_one_passes():
    space, _ = load_token_space(None)
    pairs = pick_pairs(space, ETA, 1)

    def audit(factor: float):
        def sampler(sp, ids, eta, g):  # claims eta, draws at factor x eta (factor 1: the real mechanism)
            return m_rep(sp, ids, factor * eta, g)

        [r] = audit_dchi(space, ETA, pairs, mechanism="rep", draws=DRAWS, rng=SecretGenerator(0, warn=False),
                         sampler=sampler)
        return r

    real, five, thirty = audit(1), audit(5), audit(30)
    # the real mechanism passes, its bound far below the claim
    assert not real.violated and 0 < real.eps_lb < 0.2 * real.claimed_epsilon
    # 30x too little noise is caught by a wide margin, as far as the audit's power goes
    assert thirty.violated and thirty.eps_lb > 1.3 * thirty.claimed_epsilon
    assert thirty.eps_lb <= max_certifiable_epsilon(DRAWS // 2) + 1e-9
    # the bound grows with the under-noising; 5x too little noise is still within this claim (the audit's blind spot)
    assert real.eps_lb < five.eps_lb < thirty.eps_lb and not five.violated
