"""The Slurm operating model (``model``) and its pieces, by the plugin names slurm.conf uses:
``priority/multifactor`` (``priority``, ``fairshare``), QoS limits (``qos``), partitions
(``partitions``), ``preempt/*`` (``preemption``), reservations (``reservations``), ``topology/*``
(``topology``) and the scheduling passes, ``sched/backfill`` among them (``policies``); their compiled
halves are in ``_core``."""
