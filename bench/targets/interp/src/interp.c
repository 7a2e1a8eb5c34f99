/* A stack machine interpreting a fixed bytecode program over every byte of its input, REPEATS
 * times: a dispatch loop and a handful of tiny handlers, as in a scripting language's core. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { LOADB, XOR, MULK, ROTL, POPC, ADD, DUP, SWAP, SHR, AND, STORE, NEXT, HALT };

typedef struct { uint8_t op; uint32_t arg; } Ins;

static const Ins PROGRAM[] = {
    {LOADB, 0}, {XOR, 0}, {MULK, 16777619u}, {DUP, 0}, {ROTL, 13}, {XOR, 0},
    {DUP, 0}, {POPC, 0}, {ADD, 0}, {DUP, 0}, {SHR, 7}, {AND, 0x3ff}, {STORE, 0},
    {NEXT, 0}, {HALT, 0},
};

static uint64_t run(const uint8_t *in, size_t n, uint64_t *table) {
    uint64_t stack[16], acc = 0;
    int sp = 0;
    size_t i = 0, pc = 0;
    stack[sp++] = 2166136261u;
    for (;;) {
        const Ins *ins = &PROGRAM[pc++];
        switch (ins->op) {
        case LOADB: stack[sp++] = in[i]; break;
        case XOR: sp--; stack[sp - 1] ^= stack[sp]; break;
        case MULK: stack[sp - 1] = (uint32_t)(stack[sp - 1] * ins->arg); break;
        case ROTL: { uint32_t x = (uint32_t)stack[sp - 1];
                     stack[sp - 1] = (x << ins->arg) | (x >> (32 - ins->arg)); break; }
        case POPC: stack[sp - 1] = (stack[sp - 1] * 0x9E3779B97F4A7C15ull) >> 58; break;
        case ADD: sp--; acc += stack[sp]; break;
        case DUP: stack[sp] = stack[sp - 1]; sp++; break;
        case SWAP: { uint64_t t = stack[sp - 1]; stack[sp - 1] = stack[sp - 2];
                     stack[sp - 2] = t; break; }
        case SHR: stack[sp - 1] >>= ins->arg; break;
        case AND: stack[sp - 1] &= ins->arg; break;
        case STORE: sp--; table[stack[sp]] += acc; break;
        case NEXT: if (++i < n) pc = 0; break;
        case HALT: return acc ^ stack[sp - 1];
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: interp INPUT REPEATS\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *in = malloc(n > 0 ? (size_t)n : 1);
    if (!in || fread(in, 1, (size_t)n, f) != (size_t)n) { fprintf(stderr, "read failed\n"); return 1; }
    fclose(f);
    static uint64_t table[1024];
    int repeats = atoi(argv[2]);
    uint64_t total = 0;
    for (int r = 0; r < repeats; r++)
        total = total * 1000003u + run(in, (size_t)n, table) + (uint64_t)r;
    uint64_t mix = 0;
    for (int k = 0; k < 1024; k++) mix = mix * 31 + table[k];
    printf("%llu %llu\n", (unsigned long long)total, (unsigned long long)(mix % 1000000007u));
    return 0;
}
