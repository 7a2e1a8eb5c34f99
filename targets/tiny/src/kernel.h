/* tiny: two small kernels that respond differently to compiler flags. */
#ifndef TINY_KERNEL_H
#define TINY_KERNEL_H
#include <stddef.h>
#include <stdint.h>

/* Integer work: a rolling hash with a match search, like the inner loop of an LZ compressor. */
uint64_t tiny_matches(const unsigned char *data, size_t n);

/* Floating-point work: a biquad low-pass filter run over the bytes as samples; its sum is
 * printed with limited precision so x87 vs SSE arithmetic stays comparable. */
double tiny_filter(const unsigned char *data, size_t n);
#endif
