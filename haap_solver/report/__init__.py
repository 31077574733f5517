"""Reporting apart from computing: what the commands print and write, from results computed
elsewhere.

- ``tables``: rich tables of one evaluation and its plan (``haap evaluate``).
- ``comparison``: the rows of ``haap compare`` / ``haap bench`` as a table and as CSV.
- ``bench``: the Markdown report ``haap bench`` writes (docs/benchmarks.md).
- ``bench_docs``: the benchmark record (docs/benchmarks.json) and the generated blocks of the
  docs it rewrites.
- ``plots``: the figures (benchmark plots, a plan's pipeline Gantt chart and memory drawing).
- ``calibration``: the Markdown page of the cost model's validation (``haap calibrate``).
"""
