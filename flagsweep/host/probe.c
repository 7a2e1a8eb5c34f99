/* flagsweep's CPU probe: built with a variant's target options at -O3 and run once. The loops
 * are shaped for the vectoriser (floating multiply-add, integer arithmetic, conversions) and the
 * scalar part uses bit counting and byte swapping, so the instructions the options allow the
 * compiler to emit for ordinary code are executed here; a CPU without them stops with SIGILL. */
#include <stdint.h>
#include <string.h>

#define N 4096
static float a[N], b[N], c[N];
static double d[N], e[N];
static int32_t x[N], y[N];
static int64_t q[N];

int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < N; i++) {
        a[i] = (float)(i + argc); b[i] = (float)(N - i); x[i] = i * argc; y[i] = N - i;
        d[i] = (double)i * 0.5; e[i] = (double)(N - i);
    }
    for (int i = 0; i < N; i++) c[i] = a[i] * b[i] + c[i];
    for (int i = 0; i < N; i++) d[i] = d[i] * e[i] + d[i];
    for (int i = 0; i < N; i++) x[i] = (x[i] * y[i]) ^ (x[i] >> 3);
    for (int i = 0; i < N; i++) q[i] = (int64_t)x[i] * y[i] + (int64_t)d[i];
    for (int i = 0; i < N; i++) y[i] = x[i] < y[i] ? x[i] : y[i];
    uint64_t bits = 0;
    for (int i = 0; i < N; i++) {
        uint64_t v = (uint64_t)q[i];
        bits += (uint64_t)__builtin_popcountll(v) + (uint64_t)__builtin_clzll(v | 1)
              + (uint64_t)__builtin_ctzll(v | 1u << 31) + __builtin_bswap64(v);
    }
    uint32_t word;
    memcpy(&word, c, sizeof word);
    float sum = 0;
    for (int i = 0; i < N; i++) sum += c[i] + (float)y[i];
    return (sum == -1.0f && bits == 0 && word == 1) ? 1 : 0;
}
