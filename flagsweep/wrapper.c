/* flagsweep's compiler wrapper: record the compile line, then run ccache (or the compiler).
 *
 * Built by flagsweep/wrapper.py once per real compiler, with REAL and LAUNCHER baked in.
 * When $FLAGSWEEP_COMPILE_LOG is set, appends {"argv": [REAL, args...], "cwd": "..."} as one
 * JSON line (a single O_APPEND write, so lines from make -j never interleave), then execs
 * LAUNCHER REAL args..., or REAL args... when LAUNCHER is "" or $FLAGSWEEP_CCACHE is "0".
 * Written in C because it runs once per compile: a Python wrapper's start-up cost dominated
 * warm-ccache rebuilds. A compile that cannot be recorded fails, so the audit never trusts a
 * log with holes in it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef REAL
#error "build with -DREAL=\"/path/to/compiler\""
#endif
#ifndef LAUNCHER
#define LAUNCHER ""
#endif

struct buf { char *data; size_t len, cap; };

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
        if (!b->data) { perror("flagsweep wrapper"); exit(127); }
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

static void put_string(struct buf *b, const char *s)
{
    put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\'; esc[1] = (char)c;
            put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            put(b, esc, 6);
        } else {
            put(b, (const char *)&c, 1);
        }
    }
    put(b, "\"", 1);
}

static void record(const char *log, int argc, char **argv)
{
    struct buf b = {0};
    char cwd[4096];
    put(&b, "{\"argv\": [", 10);
    put_string(&b, REAL);
    for (int i = 1; i < argc; i++) {
        put(&b, ", ", 2);
        put_string(&b, argv[i]);
    }
    put(&b, "], \"cwd\": ", 10);
    put_string(&b, getcwd(cwd, sizeof cwd) ? cwd : "?");
    put(&b, "}\n", 2);
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, b.data, b.len) != (ssize_t)b.len) {
        fprintf(stderr, "flagsweep wrapper: cannot record to %s: %s\n", log, strerror(errno));
        exit(127);
    }
    close(fd);
    free(b.data);
}

int main(int argc, char **argv)
{
    const char *log = getenv("FLAGSWEEP_COMPILE_LOG");
    if (log && *log)
        record(log, argc, argv);
    const char *ccache = getenv("FLAGSWEEP_CCACHE");
    int launch = LAUNCHER[0] && !(ccache && strcmp(ccache, "0") == 0);
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args) { perror("flagsweep wrapper"); return 127; }
    int k = 0;
    if (launch)
        args[k++] = LAUNCHER;
    args[k++] = REAL;
    for (int i = 1; i < argc; i++)
        args[k++] = argv[i];
    execv(args[0], args);
    fprintf(stderr, "flagsweep wrapper: cannot run %s: %s\n", args[0], strerror(errno));
    return 127;
}
