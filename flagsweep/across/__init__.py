"""Across sweeps: history of one target, merging machines, picking a distro-wide set, suites."""
