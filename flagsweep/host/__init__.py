"""The machine: CPU identity, compilers, machine state and its advice, perf probes, the
measurement lock, the C helpers, and the launcher that runs one execution."""
