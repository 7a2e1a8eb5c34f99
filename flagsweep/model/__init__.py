"""The typed model at the bottom of the layers: what the stages above make and read, as pydantic
models that import nothing of flagsweep's."""
