/* duo: two kernels, each fast only under one gcc switch that -O2 leaves off
 * (-floop-interchange for the grid, -fipa-cp-clone for the cells). */
#ifndef DUO_KERNEL_H
#define DUO_KERNEL_H
#include <stddef.h>
#include <stdint.h>

/* Fills both kernels' state from the input bytes, cycled. */
void duo_load(const unsigned char *data, size_t n);

/* One pass over a 1000 x 1000 grid, written column by column: each inner step jumps a row
 * (4 KB), so every access misses L1 and nothing vectorises. -floop-interchange turns the nest
 * so the inner loop walks a row: contiguous, and then vectorised by -O2's vectoriser. */
void duo_blend(uint32_t k);

/* One pass over 4096 cells through two callbacks: a loop calling through a function pointer.
 * -fipa-cp-clone gives each callback its own copy of the loop, where the call is direct, is
 * inlined, and the loop vectorises. */
uint32_t duo_cells(void);

/* A checksum of both kernels' state. */
uint32_t duo_sum(void);
#endif
