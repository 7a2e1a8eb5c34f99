/* flagsweep's launcher: run one workload and report exactly what it used.
 *
 * Usage: launch RESULT_FILE PROGRAM [ARGS...]
 * Forks, execs PROGRAM (searched on PATH when it has no slash) in the child, waits with wait4
 * and writes one line to RESULT_FILE:
 *   status <wait status> wall_ns <n> utime_us <n> stime_us <n> maxrss_kb <n>
 *   nvcsw <n> nivcsw <n> minflt <n> majflt <n>
 *
 * Why it exists: on exec, Linux carries the old address space's peak RSS into the process's
 * maxrss, so a workload spawned straight from flagsweep's Python (over 100 MB) reported
 * Python's size as its own. Forked from this small static program, the workload's maxrss is
 * its own (or this program's few hundred KB, whichever is larger). The wall time is taken here,
 * around fork and wait4, so Python's spawning cost is not in it either. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long us(struct timeval t) { return (long)t.tv_sec * 1000000L + (long)t.tv_usec; }

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: launch RESULT_FILE PROGRAM [ARGS...]\n");
        return 2;
    }
    long long start = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("flagsweep launch: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);  /* PATH is the minimal one flagsweep sets */
        fprintf(stderr, "flagsweep launch: cannot run %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) {
            perror("flagsweep launch: wait4");
            return 2;
        }
    long long wall = now_ns() - start;
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 2;
    }
    fprintf(out, "status %d wall_ns %lld utime_us %ld stime_us %ld maxrss_kb %ld "
                 "nvcsw %ld nivcsw %ld minflt %ld majflt %ld\n",
            status, wall, us(ru.ru_utime), us(ru.ru_stime), ru.ru_maxrss,
            ru.ru_nvcsw, ru.ru_nivcsw, ru.ru_minflt, ru.ru_majflt);
    return fclose(out) == 0 ? 0 : 2;
}
