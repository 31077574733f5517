"""The tensor-parallel degrees a node group allows for a model, and the divisors of a batch:
shared by the search's space and the baselines, below both (the baselines must not import the
search, which seeds from them)."""

from __future__ import annotations

from haap_solver.cluster import NodeGroup
from haap_solver.instance import Instance


def tp_candidates(instance: Instance, group: NodeGroup) -> list[int]:
    """TP degrees up to the node size and training.max_tp that divide heads, KV heads and FFN
    (formulations Sec. 1): what the validator accepts. Each TP group sits on one node, but the
    degree need not divide the node size nor be a power of two: a 3-GPU node holds one TP-2
    replica (and one GPU more), a 6-GPU node one TP-4 replica, and a model of 96 heads may run
    TP 3 or 6. Where memory needs TP 2 on 3-GPU nodes, those are the only plans there are."""
    m = instance.model
    return [t for t in range(1, min(group.gpus_per_node, instance.training.max_tp) + 1)
            if m.num_attention_heads % t == 0 and m.kv_heads % t == 0
            and m.ffn_hidden_size % t == 0]


def node_aligned_tps(instance: Instance, group: NodeGroup) -> list[int]:
    """The degrees of `tp_candidates` that are powers of two dividing the node size: what a
    Megatron-style rank layout keeps on one node (TP innermost, consecutive ranks), and what
    tiles a node so that replicas pack by the GPU budget alone (formulations Sec. 1.3). The
    baselines plan with these, and so does a mixed stage's part (Sec. 1.1)."""
    return [t for t in tp_candidates(instance, group)
            if t & (t - 1) == 0 and group.gpus_per_node % t == 0]


def divisors(n: int) -> list[int]:
    """The divisors of n >= 1, ascending. Pairs d, n // d up to sqrt(n): the global batch may be
    2^20 sequences (limits.MAX_BATCH), where walking every integer up to n took seconds per call
    and the set-up calls it once per pipeline depth."""
    small: list[int] = []
    large: list[int] = []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]
