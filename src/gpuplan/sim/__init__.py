"""Simulation: the event engine, cluster state, scheduling policies and the operating models."""
