/* tiny FILE [ROUNDS]: run both kernels over FILE and print their results. */
#include "kernel.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifndef TINY_EXTRA_PERMILLE
#define TINY_EXTRA_PERMILLE 0
#endif
/* In .data whatever its value: a zero would otherwise go to .bss and move other data. */
static volatile unsigned extra_permille __attribute__((section(".data"))) = TINY_EXTRA_PERMILLE;

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
    if (argc < 2) {
        fprintf(stderr, "usage: tiny FILE [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 1;
    size_t n;
    unsigned char *data = slurp(argv[1], &n);
    if (!data) {
        perror(argv[1]);
        return 1;
    }
    uint64_t matches = 0;
    double energy = 0;
    for (int r = 0; r < rounds; r++) {
        matches += tiny_matches(data, n);
        energy += tiny_filter(data, n);
    }
    /* Test hooks: flagsweep's tests build variants with -DTINY_CRASH, -DTINY_HANG or
     * -DTINY_WRONG to get a binary that dies, never finishes, or prints a wrong result.
     * -D flags do not choose code generation, so the flag audit accepts them. */
#ifdef TINY_CRASH
    raise(SIGSEGV);
#endif
#ifdef TINY_HANG
    for (;;)
        pause();
#endif
#ifdef TINY_WRONG
    energy *= 1.5;
#endif
    /* Calibration hook: `flagsweep calibrate` plants an effect of known size by running both
     * kernels again, over the whole input, for an extra extra_permille/1000 of the rounds:
     * -DTINY_EXTRA_PERMILLE=30 with 100 rounds runs 3 more rounds, 3% more work. Whole passes,
     * because the match search's cost depends on the bytes it reads: an extra 10% of the input
     * taken from its start cost 4.3% more instructions, not 10% (Cachegrind). A share of a round
     * that is left over (rounds * permille not a multiple of 1000) still runs over that share of
     * the input, so it is only roughly its size. The amount is a volatile variable, not code:
     * binaries built with different amounts have identical code and layout (moving the kernels
     * by a few bytes alone shifted tiny's time by 2-3% here), and the results go to a volatile
     * sink, so the output stays the same. */
    size_t planted = (size_t)(rounds > 0 ? rounds : 0) * extra_permille;
    size_t passes = planted / 1000, extra = n * (planted % 1000) / 1000;
    volatile uint64_t sink_matches = 0;
    volatile double sink_energy = 0;
    for (size_t r = 0; r < passes; r++) {
        sink_matches += tiny_matches(data, n);
        sink_energy += tiny_filter(data, n);
    }
    if (extra) {
        sink_matches += tiny_matches(data, extra);
        sink_energy += tiny_filter(data, extra);
    }
    printf("bytes %zu matches %llu energy %.6f\n", n, (unsigned long long)matches, energy / rounds);
    free(data);
    return 0;
}
