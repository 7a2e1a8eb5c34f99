"""Why a variant is faster or slower: per-function profiles of the checked workload under the
baseline and each variant with a verdict, matched by symbol, the change attributed to functions
(docs/explain.md)."""
