"""Where a sweep's (or a sizing's) points run: this machine's worker processes, or a Ray cluster.

- ``LocalExecutor`` (``--engine local``, the default): ``gpuplan.workers.run_all``, one forked
  process per point, at most ``processes`` at a time, each forked with its variant already read;
- ``RayExecutor`` (``--engine ray [--address ADDR]``, ``pip install 'gpuplan[ray]'``): one Ray task
  per point, its results streamed back as they finish (``ray.wait``). Each variant's input, read
  here, goes once into Ray's object store; a seed other than the scenario's is synthesised again in
  the task, which reads the traces and demand curves the scenario names at their paths, so those
  must be at the same path on every Ray node (a shared file system, as Slurm clusters and KubeRay
  volumes have). Without ``--address`` Ray starts on this machine with one worker per process
  asked for.

Both give the same results, point for point: a point's result depends on its inputs only.

Example: ``executor_for("local", processes=2).run(tasks, on_result)``
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from gpuplan.compare import ModelSeedResult, run_model_seed
from gpuplan.errors import InputError
from gpuplan.inputs import Input
from gpuplan.sweep.points import Executor, Task
from gpuplan.workers import run_all

ENGINES = ("local", "ray")


def _run_forked(index: int, loaded: Input, model: str, seed: int) -> tuple[int, ModelSeedResult]:
    """In a forked worker: the point with its input already read."""
    return index, run_model_seed(loaded, 0.0, model, seed, False)


class LocalExecutor(Executor):
    """This machine's worker processes (``gpuplan.workers``)."""

    name = "local"

    def __init__(self, processes: int | None = None) -> None:
        self.workers = max(processes or os.cpu_count() or 1, 1)

    def run(self, tasks: Sequence[Task], on_result: Callable[[Task, ModelSeedResult], None]) -> None:
        calls = [(k, task.loaded, task.model, task.seed) for k, task in enumerate(tasks)]

        def finished(done: tuple[int, ModelSeedResult]) -> None:
            on_result(tasks[done[0]], done[1])

        run_all(_run_forked, calls, min(self.workers, max(len(calls), 1)), finished)


def _run_in_ray(index: int, loaded: Input, model: str, seed: int) -> tuple[int, ModelSeedResult]:
    """In a Ray worker: the point, its variant's input taken from the object store."""
    return index, run_model_seed(loaded, 0.0, model, seed, False)


class RayExecutor(Executor):
    """One Ray task per point on the cluster at ``address`` (None: a Ray started here)."""

    name = "ray"

    def __init__(self, address: str | None = None, processes: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise InputError(
                "Ray is not installed: pip install 'gpuplan[ray]' (or use --engine local)", field="--engine"
            ) from None
        self._ray: Any = ray
        self.address = address
        self.workers = max(processes or os.cpu_count() or 1, 1)

    def _start(self) -> None:
        ray = self._ray
        if ray.is_initialized():
            return
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if self.address is None:
            ray.init(num_cpus=self.workers, **options)
        else:
            try:
                ray.init(address=self.address, **options)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise InputError(
                    f"cannot join the Ray cluster at {self.address}: {exc}", field="--address"
                ) from None
        self.workers = int(ray.cluster_resources().get("CPU", self.workers))

    def run(self, tasks: Sequence[Task], on_result: Callable[[Task, ModelSeedResult], None]) -> None:
        if not tasks:
            return
        ray = self._ray
        self._start()
        remote = ray.remote(num_cpus=1, max_retries=1)(_run_in_ray)
        stored: dict[int, Any] = {}  # each variant's input, put once
        pending = []
        for k, task in enumerate(tasks):
            if id(task.loaded) not in stored:
                stored[id(task.loaded)] = ray.put(task.loaded)
            pending.append(remote.remote(k, stored[id(task.loaded)], task.model, task.seed))
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                index, result = ray.get(done[0])
                on_result(tasks[index], result)
        except KeyboardInterrupt:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise


def executor_for(engine: str, address: str | None = None, processes: int | None = None) -> Executor:
    """The executor ``--engine`` names."""
    if engine == "local":
        if address is not None:
            raise InputError("--address is Ray's: use it with --engine ray", field="--address")
        return LocalExecutor(processes)
    if engine == "ray":
        return RayExecutor(address, processes)
    raise InputError(f"{engine!r}: expected one of {', '.join(ENGINES)}", field="--engine")
