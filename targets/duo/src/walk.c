#include "duo.h"

/* One block, so the two arrays' relative placement is fixed whatever the flags; room for
 * stride 2. */
static struct {
    uint16_t lane[2 * DUO_SPAN];
    uint16_t gain[2 * DUO_SPAN];
} w __attribute__((aligned(64)));

/* Cold, and without branches inside its loop: a switch that changed this code would move the
 * run's time a little and could be taken for one that matters. n > 0. */
void duo_walk_load(const unsigned char *data, size_t n)
{
    for (size_t i = 0; i < 2 * DUO_SPAN; i++) {
        w.lane[i] = (uint16_t)(data[i % n] | data[(i + 1) % n] << 8);
        w.gain[i] = (uint16_t)(data[(i + 2) % n] | 1);
    }
}

/* aligned: the loop's place in its cache lines is then the same in every build where this
 * function's code is. */
__attribute__((aligned(64))) void duo_walk(size_t stride, uint16_t k)
{
    /* Unsigned arithmetic: wrapping is defined, so every flag set prints the same checksum. */
    for (size_t i = 0; i < DUO_SPAN; i++)
        w.lane[i * stride] = (uint16_t)(w.lane[i * stride] * 3u
                                        + (uint32_t)w.gain[i * stride] * k);
}

uint32_t duo_walk_sum(void)
{
    /* Each value weighed by its place, so values swapped between places change the sum. */
    uint32_t s = 0;
    for (uint32_t i = 0; i < 2 * DUO_SPAN; i++)
        s += (uint32_t)w.lane[i] * (i | 1);
    return s;
}
