"""The workload: the inputs each binary runs on, and the check of its output."""
