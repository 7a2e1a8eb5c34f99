/* duo FILE: run both kernels a number of passes set by FILE's size, print a checksum.
 * flagsweep's known answer for `flagsweep tune`, not a benchmark of anything real. */
#include "duo.h"

#include <stdio.h>
#include <stdlib.h>

/* Bytes of input per pass of each kernel: at -O2 the walk and the cells take about half of
 * the run each, so either switch alone saves a third or more of it (docs/targets.md). */
#ifndef BYTES_PER_WALK
#define BYTES_PER_WALK 100
#endif
#ifndef BYTES_PER_CELLS
#define BYTES_PER_CELLS 800
#endif

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    unsigned char *buf = malloc(size > 0 ? (size_t)size : 1);
    *n = buf ? fread(buf, 1, (size_t)size, f) : 0;
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: duo FILE\n");
        return 2;
    }
    size_t n;
    unsigned char *data = slurp(argv[1], &n);
    if (!data) {
        perror(argv[1]);
        return 1;
    }
    size_t walks = n / BYTES_PER_WALK + 1, rounds = n / BYTES_PER_CELLS + 1;
    /* The stride is 1, but the compiler cannot know it: it comes from the input. */
    size_t stride = n ? 1 : 2;
    static const unsigned char zero[1];
    duo_walk_load(n ? data : zero, n ? n : 1);
    duo_cells_load(n ? data : zero, n ? n : 1);
    for (size_t r = 0; r < walks; r++)
        duo_walk(stride, (uint16_t)(r + 1));
    uint32_t cells = 0;
    for (size_t r = 0; r < rounds; r++)
        cells += duo_cells();
    printf("bytes %zu walks %zu rounds %zu cells %08x walk %08x %08x\n", n, walks, rounds,
           (unsigned)cells, (unsigned)duo_walk_sum(), (unsigned)duo_cells_sum());
    free(data);
    return 0;
}
