"""The largest values input files may hold, with why each is large enough.

Every numeric field of the instance, plan and profile schemas has a range (``Range`` in its
annotation, built from these constants). The limits are far above any real model or cluster (the
reason is given beside each) and exist so that an absurd value (``hidden_size = 1e300``, a plan of
236,966 stages) is refused with ``FILE: field: must be <= N, got ...`` before any arithmetic or
loop runs on it, instead of overflowing, exhausting memory or running for minutes.
"""

from __future__ import annotations

MAX_LAYERS = 4_096
"""Decoder layers. Published dense models have at most ~160 (Llama-3.1 405B: 126)."""
MAX_HIDDEN_SIZE = 1_048_576
"""Model width h (2^20). Published: at most ~25,600 (MT-NLG 530B: 20,480)."""
MAX_FFN_HIDDEN_SIZE = 4_194_304
"""MLP inner width (2^22). Published: at most ~100,000 (PaLM 540B: 73,728)."""
MAX_HEADS = 65_536
"""Attention (and key/value) heads. Published: at most ~128."""
MAX_VOCAB_SIZE = 16_777_216
"""Vocabulary (2^24). Published: at most ~260,000."""
MAX_SEQ_LENGTH = 16_777_216
"""Tokens per sequence (2^24; 10-million-token contexts have been announced)."""
MAX_BATCH = 1_048_576
"""Sequences per global batch, micro-batch or batch share of a plan (2^20; the largest published
global batch is 65,536 sequences: BERT trained with LAMB)."""
MAX_MICRO_BATCH = 65_536
"""Largest micro-batch the planner may consider, or a profile may measure (real ones: 1-64; the
search enumerates batch shares up to it, and took minutes at 2^24)."""
MAX_TP = 1_024
"""Tensor-parallel degree, and GPUs, replicas or NICs in one node (NVL576 domains: 576)."""
MAX_NODES = 1_048_576
"""Nodes of one node group (2^20)."""
MAX_NODE_GROUPS = 1_024
"""Node groups of one cluster."""
MAX_GPUS = 4_194_304
"""GPUs of one cluster (2^22; the largest clusters built have ~200,000)."""
MAX_GBIT_S = 1e6
"""Per-NIC line rate, Gbit/s (1 Pbit/s; today's fastest NICs: 800)."""
MIN_GBIT_S = 1e-6
"""Slowest link, Gbit/s (1 kbit/s; a 1990s modem had 56). The lower limits keep costs finite in
the solvers: a link of 1e-30 Gbit/s made a send take 1e31 s, and HiGHS reads a coefficient of
1e20 or more as infinity (an "internal error" or an invalid plan, instead of an answer)."""
MAX_LATENCY_US = 1e6
"""Per-message latency, microseconds (1 s)."""
MAX_TFLOPS = 1e6
"""Peak throughput of one device, TFLOP/s (1 EFLOP/s; today's fastest: ~5,000 at low precision)."""
MIN_TFLOPS = 1e-6
"""Lowest peak throughput, TFLOP/s (1 MFLOP/s; one CPU core does ~10^5 times more)."""
MAX_MEMORY_GIB = 1_048_576.0
"""Memory of one device, or memory held back on it, GiB (1 PiB; today's largest: ~300)."""
MAX_GB_S = 1e7
"""Memory or intra-node bandwidth of one device, GB/s (10 PB/s; today's fastest HBM: ~8,000)."""
MIN_GB_S = 1e-6
"""Lowest memory or intra-node bandwidth, GB/s (1 kB/s)."""
MIN_SPEED = 0.01
"""Slowest straggler, as a fraction of nominal compute or network speed (1%): a node slower than
that has failed and leaves the cluster (a resize). With MIN_TFLOPS and MIN_GB_S it keeps a
slowed device's costs finite in the solvers."""
MAX_SECONDS = 1e9
"""A measured or expected time, seconds (about 32 years)."""
MAX_BYTES = 2.0**60
"""A byte count (1 EiB)."""
MAX_PROFILE_ENTRIES = 100_000
"""[[entry]] tables of one profile file."""
MAX_STAGES = MAX_LAYERS + 2
"""Pipeline stages of a plan: one per layer, plus an embedding-only first and a head-only last."""
MAX_REPLICA_GROUPS = 65_536
"""Replica groups of one stage."""
MAX_PRICE_PER_GPU_HOUR = 1e6
"""Price of one GPU for one hour, in the currency the instance uses (today's cloud list prices:
about 0.2 to 15 US dollars)."""
MAX_COST_PER_ITERATION = 1e12
"""A cap on the price of one optimizer step, in that currency (far above any cluster's hour)."""
MAX_TOKENS_PER_S = 1e15
"""A floor on training throughput, tokens per second (today's largest runs: ~1e7)."""
