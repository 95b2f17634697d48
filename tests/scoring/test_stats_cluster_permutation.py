"""``stats.within_cluster_permutation_p``: the exact test against chance that relabels each
sentence's stimuli as one."""

from __future__ import annotations

import numpy as np


def test_clustered_test_against_chance_relabels_whole_sentences():
    """A sentence's mirrored questions (reading 1 heard as 1, reading 2 as 2) rise and fall
    together; the test relabels a sentence's stimuli as one, exactly - with every label its
    stimuli carry, including one no question asks about (ADEPT's neutral sample)."""
    from itertools import permutations, product

    from adept_eval.scoring.stats import within_cluster_permutation_p as p

    ab = ("a", "b")
    both, one, none = [("a", "a"), ("b", "b")], [("a", "a"), ("a", "b")], [("b", "a"), ("a", "b")]
    assert p([(ab, both)] * 5) == 1 / 32  # 10/10: the binomial says 0.001
    assert p([(ab, both)] * 4 + [(ab, one)]) == 1 / 16  # 9/10 is not above chance here
    assert p([(ab, both)] * 3 + [(ab, one)] * 2) == 1 / 8
    assert p([(ab, both)] * 4 + [(ab, none)]) == 6 / 32
    assert p([(ab, [(None, "a"), (None, "b")])]) == 1.0 and p([]) == 1.0  # failed: never right
    # a neutral sample nobody picked still takes part in the relabelling: two targets asked
    # about among three samples, both found, is 1 in 3! = 6 per sentence, not 1 in 2
    asked = (("a", "b", "n"), both)
    assert abs(p([asked] * 2) - 1 / 36) < 1e-12
    # against brute force over every joint relabelling of three sentences, each with three
    # stimuli labelled x, y, z and a fourth label n that no question asks about
    rng = np.random.default_rng(3)
    labels = ("n", "x", "y", "z")
    relabellings = [dict(zip(labels, image)) for image in permutations(labels)]
    for _ in range(5):
        clusters = [(labels, [(str(rng.choice(labels)), t) for t in labels[1:]])
                    for _ in range(3)]
        seen = sum(g == t for _, c in clusters for g, t in c)
        hits = [sum(g == m[t] for (_, c), m in zip(clusters, ms) for g, t in c) >= seen
                for ms in product(relabellings, repeat=3)]
        assert abs(p(clusters) - np.mean(hits)) < 1e-12
