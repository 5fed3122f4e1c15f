"""Sizing (``gpuplan size``): the least-cost node counts per model that meet the scenario's targets,
searched over variants of the scenario run through the sweep's executors (``gpuplan.sweep``)."""
