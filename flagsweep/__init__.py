"""flagsweep: which compiler flags actually matter for this program, on this CPU."""

__version__ = "0.1.0"
