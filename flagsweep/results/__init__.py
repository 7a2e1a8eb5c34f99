"""Results: the store of every sample (store), the statistics (analysis), results.json and
samples.csv written from them (writer), the public contract (contract) and its reader.

Nothing is imported here, so reading the contract does not load the statistics."""
