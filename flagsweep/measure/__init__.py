"""Measuring: the shuffled rounds and their stopping rule, one sample, metrics, disturbance."""
