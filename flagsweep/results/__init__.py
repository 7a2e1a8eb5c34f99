"""Results: the store of every sample (store), the statistics (analysis), results.json and
samples.csv written from them (writer) and the reader of those files (reader); the files'
typed model is flagsweep.model, below every stage.

Nothing is imported here, so reading a results.json does not load the statistics."""
