#include "duo.h"

static uint32_t cells[DUO_CELLS] __attribute__((aligned(64)));

/* Cold (see walk.c). n > 0. */
void duo_cells_load(const unsigned char *data, size_t n)
{
    for (size_t i = 0; i < DUO_CELLS; i++)
        cells[i] = (uint32_t)data[(i + 3) % n] << 16 ^ (uint32_t)i * 0x01000193u;
}

static uint32_t scramble(uint32_t x) { return (x ^ x >> 7) * 0x9e3779b1u; }
static uint32_t spread(uint32_t x) { return x * 5 + (x >> 11) + 0x7f4a7c15u; }

/* noinline: inlined into its two calls, the callback would be known without any cloning.
 * Called with two different callbacks, plain IPA-CP cannot propagate either (it would for
 * one), so only -fipa-cp-clone makes the call direct. aligned: see walk.c. */
__attribute__((noinline, aligned(64))) static uint32_t cells_apply(uint32_t *v, size_t n,
                                                                    uint32_t (*op)(uint32_t))
{
    uint32_t s = 0;
    for (size_t i = 0; i < n; i++) {
        v[i] = op(v[i]);
        s += v[i];
    }
    return s;
}

uint32_t duo_cells(void)
{
    return cells_apply(cells, DUO_CELLS, scramble) ^ cells_apply(cells, DUO_CELLS, spread);
}

uint32_t duo_cells_sum(void)
{
    uint32_t s = 0;
    for (uint32_t i = 0; i < DUO_CELLS; i++)
        s += cells[i] ^ i;
    return s;
}
