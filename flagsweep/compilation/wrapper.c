/* flagsweep's compiler wrapper: run ccache (or the compiler), then record the command.
 *
 * Built by flagsweep/compilation/wrapper.py once per real compiler, with REAL and LAUNCHER baked in.
 * Runs LAUNCHER REAL args..., or REAL args... when LAUNCHER is "" or $FLAGSWEEP_CCACHE is "0".
 * When $FLAGSWEEP_COMPILE_LOG is set it waits for that command and appends
 *   {"argv": [REAL, args...], "cwd": "...", "exit": N, "output": {"mtime_ns", "size", "ino"},
 *    "inputs": [[word, mtime_ns, size, ino], ...]}
 * as one JSON line (a single O_APPEND write, so lines from make -j never interleave); "output"
 * describes the -o file as the command left it, so the audit can tell a file that something
 * else rewrote later, and "inputs" every other file an argument names (its sources among
 * them), so the audit can tell a source rewritten after the compile from the one compiled.
 * Without the variable it simply execs.
 * Written in C because it runs once per compile: a Python wrapper's start-up cost dominated
 * warm-ccache rebuilds. A command that cannot be recorded fails, so the audit never trusts a
 * log with holes in it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* The -o file of a command line ("-o FILE" or "-oFILE", the last one wins, as in gcc). */
static const char *output_of(int argc, char **argv)
{
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strncmp(argv[i], "-o", 2) == 0 && argv[i][2])
            out = argv[i] + 2;
    }
    return out;
}

static void record(const char *log, int argc, char **argv, int exit_code)
{
    struct buf b = {0};
    char cwd[4096], num[96];
    struct stat st;
    put(&b, "{\"argv\": [", 10);
    put_string(&b, REAL);
    for (int i = 1; i < argc; i++) {
        put(&b, ", ", 2);
        put_string(&b, argv[i]);
    }
    put(&b, "], \"cwd\": ", 10);
    put_string(&b, getcwd(cwd, sizeof cwd) ? cwd : "?");
    snprintf(num, sizeof num, ", \"exit\": %d", exit_code);
    put(&b, num, strlen(num));
    const char *out = output_of(argc, argv);
    if (out && stat(out, &st) == 0) {
        snprintf(num, sizeof num, ", \"output\": {\"mtime_ns\": %lld, \"size\": %lld, \"ino\": %llu}",
                 (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                 (long long)st.st_size, (unsigned long long)st.st_ino);
        put(&b, num, strlen(num));
    }
    put(&b, ", \"inputs\": [", 13);
    int listed = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' || stat(argv[i], &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (listed++)
            put(&b, ", ", 2);
        put(&b, "[", 1);
        put_string(&b, argv[i]);
        snprintf(num, sizeof num, ", %lld, %lld, %llu]",
                 (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                 (long long)st.st_size, (unsigned long long)st.st_ino);
        put(&b, num, strlen(num));
    }
    put(&b, "]}\n", 3);
    int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, b.data, b.len) != (ssize_t)b.len) {
        fprintf(stderr, "flagsweep wrapper: cannot record to %s: %s\n", log, strerror(errno));
        exit(127);
    }
    close(fd);
    free(b.data);
}

/* Run args and wait; its exit code, or 128 + the signal that ended it. */
static int run(char **args)
{
    pid_t parent = getpid(), child = fork();
    if (child < 0) {
        perror("flagsweep wrapper: fork");
        exit(127);
    }
    if (child == 0) {
        /* The compiler never outlives the wrapper that would record it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        execv(args[0], args);
        fprintf(stderr, "flagsweep wrapper: cannot run %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("flagsweep wrapper: waitpid");
            exit(127);
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
    const char *log = getenv("FLAGSWEEP_COMPILE_LOG");
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
    if (!(log && *log)) {
        execv(args[0], args);
        fprintf(stderr, "flagsweep wrapper: cannot run %s: %s\n", args[0], strerror(errno));
        return 127;
    }
    int code = run(args);
    record(log, argc, argv, code);
    if (code > 128) {  /* ended by a signal: end the same way, so make and Ninja see it */
        signal(code - 128, SIG_DFL);
        raise(code - 128);
    }
    return code;
}
