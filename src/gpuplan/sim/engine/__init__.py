"""The engine core: the clock, the event heaps, nodes and their resources, the queue and the running
set (``_core/engine.c``), and its Python side (``core``). It knows no scheduler's policy; the Slurm
pieces it calls live in ``gpuplan.sim.slurm.model``."""
