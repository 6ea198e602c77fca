"""Demos that run under real ``torchrun`` (gloo on CPU, nccl on GPUs).

Each demo module keeps its worker logic in importable functions of ``(rank, world_size)``
that expect an initialised default process group, so the same code runs three ways:

* under torchrun: ``torchrun --standalone --nproc-per-node 4 -m scaleout.demos.collectives``;
* from a notebook cell: ``scaleout.dist.run(check_collectives, 4, kwargs={"numel": 10})``;
* from the benchmarks in ``bench/``.

Modules: :mod:`~scaleout.demos.common` (process-group setup from torchrun's environment),
:mod:`~scaleout.demos.collectives` (every collective checked against its numpy reference,
and a ring all-reduce written with point-to-point sends only).
"""
