"""Stage 3, builds: fetch the source, build every variant through the CMake superbuild with
recording compiler wrappers, audit what reached the compiler, fingerprint the code."""
