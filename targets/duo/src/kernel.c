#include "kernel.h"

/* Not powers of two: a 4 KB row stride would map a whole column to a few cache sets, and the
 * column walk's cost would then be that CPU's set-conflict behaviour, not the loop order. */
#define ROWS 1000
#define COLS 1000
#define CELLS 4096

static uint32_t grid[ROWS][COLS];
static uint32_t acc[ROWS][COLS];
static uint32_t cells[CELLS];

void duo_load(const unsigned char *data, size_t n)
{
    size_t at = 0;
    for (size_t i = 0; i < ROWS; i++)
        for (size_t j = 0; j < COLS; j++) {
            grid[i][j] = n ? data[at] : (uint32_t)(i ^ j);
            acc[i][j] = 0;
            at = at + 1 < n ? at + 1 : 0;
        }
    for (size_t i = 0; i < CELLS; i++) {
        cells[i] = n ? (uint32_t)data[at] << 8 | data[(at + 1) % n] : (uint32_t)i;
        at = at + 1 < n ? at + 1 : 0;
    }
}

void duo_blend(uint32_t k)
{
    /* Column by column on purpose (see kernel.h). Unsigned arithmetic: wrapping is defined,
     * so every flag set must print the same checksum. */
    for (size_t j = 0; j < COLS; j++)
        for (size_t i = 0; i < ROWS; i++)
            acc[i][j] = acc[i][j] * 3 + grid[i][j] * k;
}

static uint32_t scramble(uint32_t x) { return (x ^ x >> 7) * 0x9e3779b1u; }
static uint32_t spread(uint32_t x) { return x * 5 + (x >> 11) + 0x7f4a7c15u; }

/* noinline: inlined into its two calls, the callback would be known without any cloning.
 * Called with two different callbacks, plain IPA-CP cannot propagate either (it would for
 * one), so only -fipa-cp-clone makes the call direct. */
__attribute__((noinline)) static uint32_t cells_apply(uint32_t *v, size_t n,
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
    return cells_apply(cells, CELLS, scramble) ^ cells_apply(cells, CELLS, spread);
}

uint32_t duo_sum(void)
{
    uint32_t s = 0;
    for (size_t i = 0; i < ROWS; i++)
        for (size_t j = 0; j < COLS; j++)
            s = s * 31 + acc[i][j];
    for (size_t i = 0; i < CELLS; i++)
        s = s * 31 + cells[i];
    return s;
}
