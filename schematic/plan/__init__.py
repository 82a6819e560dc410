"""Planning: a cluster file's pools resolved against the facts into one plan per pool
(:mod:`~schematic.plan.cluster`), checked against the target chart
(:mod:`~schematic.plan.charts`), with the GPU path (:mod:`~schematic.plan.gpupath`) and the
comparison of two plans (:mod:`~schematic.plan.upgrade`).
"""
