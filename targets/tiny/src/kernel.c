#include "kernel.h"

#include <math.h>
#include <string.h>

#define HASH_BITS 15
#define WINDOW 4096

uint64_t tiny_matches(const unsigned char *data, size_t n)
{
    static uint32_t head[1u << HASH_BITS];
    uint64_t total = 0;
    memset(head, 0xff, sizeof head);
    for (size_t i = 0; i + 3 < n; i++) {
        uint32_t h = ((uint32_t)data[i] << 10 ^ (uint32_t)data[i + 1] << 5 ^ data[i + 2])
                     & ((1u << HASH_BITS) - 1);
        uint32_t prev = head[h];
        head[h] = (uint32_t)i;
        if (prev == UINT32_MAX || i - prev > WINDOW)
            continue;
        size_t len = 0;
        while (i + len < n && len < 258 && data[prev + len] == data[i + len])
            len++;
        total += len * len;
    }
    return total;
}

double tiny_filter(const unsigned char *data, size_t n)
{
    /* Butterworth low-pass coefficients for fc = fs/8. */
    const double b0 = 0.0976, b1 = 0.1953, b2 = 0.0976, a1 = -0.9428, a2 = 0.3333;
    double x1 = 0, x2 = 0, y1 = 0, y2 = 0, energy = 0;
    for (size_t i = 0; i < n; i++) {
        double x = (data[i] - 128.0) / 128.0;
        double y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2;
        x2 = x1; x1 = x;
        y2 = y1; y1 = y;
        energy += sqrt(y * y + 1e-12);
    }
    return energy / (n ? (double)n : 1.0);
}
