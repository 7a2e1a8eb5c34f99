/* duo FILE: run both kernels a number of passes set by FILE's size, print a checksum.
 * flagsweep's known answer for `flagsweep tune`, not a benchmark of anything real. */
#include "kernel.h"

#include <stdio.h>
#include <stdlib.h>

/* Bytes of input per pass of each kernel: at -O2 on a 2 MB input the grid and the cells take
 * about half of the run each, so either switch alone saves about a third of it. */
#define BYTES_PER_BLEND 100000
#define BYTES_PER_CELLS 800

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
    size_t blends = n / BYTES_PER_BLEND + 1, rounds = n / BYTES_PER_CELLS + 1;
    duo_load(data, n);
    uint32_t cells = 0;
    for (size_t r = 0; r < blends; r++)
        duo_blend((uint32_t)r + 1);
    for (size_t r = 0; r < rounds; r++)
        cells += duo_cells();
    printf("bytes %zu blends %zu rounds %zu cells %08x state %08x\n", n, blends, rounds,
           (unsigned)cells, (unsigned)duo_sum());
    free(data);
    return 0;
}
