/* duo: two kernels, each fast only under one gcc switch that -O2 leaves off: the walk under
 * -fversion-loops-for-strides, the cells under -fipa-cp-clone. Each lives in its own file, so
 * one switch changing one kernel's code never moves the other's (code placement alone moved a
 * scalar loop's time by a third on the machine they were written on). */
#ifndef DUO_H
#define DUO_H
#include <stddef.h>
#include <stdint.h>

/* walk.c: a pass over 4096 16-bit values whose stride is known only at run time, as in a
 * library routine that takes a stride (BLAS's incx); duo calls it with 1. A strided loop does
 * not vectorise; -fversion-loops-for-strides adds a copy of the loop for stride 1, which -O2's
 * vectoriser turns into 8-lane SIMD. stride must be 1 or 2. */
void duo_walk_load(const unsigned char *data, size_t n);
void duo_walk(size_t stride, uint16_t k);
uint32_t duo_walk_sum(void);

/* cells.c: a pass over 4096 cells through two callbacks, a loop calling through a function
 * pointer. -fipa-cp-clone gives each callback its own copy of the loop, where the call is
 * direct, is inlined, and the loop vectorises. */
void duo_cells_load(const unsigned char *data, size_t n);
uint32_t duo_cells(void);
uint32_t duo_cells_sum(void);

/* Each kernel's state is small enough to stay in L1 (32 KB or more on x86-64 CPUs), so the
 * switches' gains are vectorisation, the transformations themselves, and not a CPU's cache
 * or TLB sizes. The counts are compile-time constants and multiples of the vector width:
 * -O2's "very cheap" vectoriser cost model takes only loops that need no scalar remainder
 * loop (GCC manual, -fvect-cost-model). */
#define DUO_SPAN 4096
#define DUO_CELLS 4096
#endif
