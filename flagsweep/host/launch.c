/* flagsweep's launcher: run one workload and report exactly what it used.
 *
 * Usage: launch RESULT_FILE PROGRAM [ARGS...]
 * Forks, execs PROGRAM (searched on PATH when it has no slash) in the child, waits for it and
 * writes one line of "name value" pairs to RESULT_FILE:
 *   status <wait status> wall_ns <n> utime_us <n> stime_us <n> maxrss_kb <n>
 *   nvcsw <n> nivcsw <n> minflt <n> majflt <n>
 *   exec_ns <n> run_delay_ns <n> own_delay_ns <n> migrations <n> steal_ticks <n> cpu <n>
 *   leftover <n>
 * exec_ns, run_delay_ns, own_delay_ns and migrations are -1 where the kernel does not offer them.
 *
 * Why it exists: on exec, Linux carries the old address space's peak RSS into the process's
 * maxrss, so a workload spawned straight from flagsweep's Python (over 100 MB) reported
 * Python's size as its own. Forked from this small static program, the workload's maxrss is
 * its own (or this program's few hundred KB, whichever is larger). The wall time is taken here,
 * around fork and wait4, so Python's spawning cost is not in it either.
 *
 * Evidence of disturbance: once the child has exited it is still a zombie until reaped, and
 * its /proc entries still hold what the scheduler recorded. waitid(WNOWAIT) waits without
 * reaping, so /proc/<pid>/schedstat (time on the CPU, and run_delay: time spent runnable but
 * waiting for the CPU, Documentation/scheduler/sched-stats.rst) and /proc/<pid>/sched
 * (se.nr_migrations) can be read before wait4 collects the rusage. The host's steal time of the
 * CPU this ran on comes from /proc/stat before and after (USER_HZ ticks: coarse, a flag). These
 * describe the main thread; a multi-threaded workload's other threads are gone by then.
 * own_delay_ns is this launcher's own run_delay while it waits for the workload: on a busy CPU
 * it waits to be scheduled after the workload exits, and that wait is inside the wall time too.
 *
 * Nothing the workload starts outlives it. The launcher is a child subreaper, so every process
 * the workload forks and orphans (even one that left the process group with setsid) becomes
 * the launcher's child; once the workload has exited, the launcher kills and reaps whatever of
 * them is still running (the report's `leftover` counts them), so none runs beside the next
 * measurement. SIGTERM makes the launcher kill the workload and do the same: flagsweep stops a
 * run that way (timeout, Ctrl-C), and the kernel sends it when flagsweep itself dies, even by
 * kill -9 (PR_SET_PDEATHSIG), so a hung workload does not stay behind either. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;
static volatile pid_t workload;

/* SIGTERM: end the workload now; main() then ends everything else it started. */
static void stop(int sig)
{
    (void)sig;
    stopping = 1;
    if (workload > 0)
        kill(workload, SIGKILL);
}

/* SIGKILL every running child of this process (the workload's orphans, reparented here);
 * returns how many. /proc/<pid>/children needs CONFIG_PROC_CHILDREN, so /proc is scanned. */
static int kill_children(void)
{
    char path[300], buf[512];
    int n = 0;
    DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    for (struct dirent *e; (e = readdir(proc));) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = 0;
        char *end = strrchr(buf, ')');  /* the command name may hold spaces and parentheses */
        char state;
        int ppid;
        if (end && sscanf(end + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid() &&
            state != 'Z' && kill(atoi(e->d_name), SIGKILL) == 0)
            n++;
    }
    closedir(proc);
    return n;
}

/* After the workload: kill and reap every process it left behind; returns how many ran on. */
static int end_leftovers(void)
{
    int killed = 0, idle = 0;
    for (;;) {
        pid_t r = waitpid(-1, NULL, WNOHANG);
        if (r > 0 || (r < 0 && errno == EINTR))
            continue;
        if (r < 0)  /* ECHILD: none left, the usual case, found in one system call */
            return killed;
        int n = kill_children();
        if (n == 0) {  /* one is exiting right now, or /proc cannot be read: give up after 1 s */
            if (++idle > 1000)
                return killed;
            usleep(1000);
            continue;
        }
        killed += n;
        for (int i = 0; i < n;)
            if (waitpid(-1, NULL, 0) > 0 || errno == ECHILD)
                i++;
    }
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long us(struct timeval t) { return (long)t.tv_sec * 1000000L + (long)t.tv_usec; }

/* The steal ticks of one CPU (the 9th field of its "cpuN" line in /proc/stat), -1 if unknown. */
static long long steal_ticks(int cpu)
{
    char want[32], line[512];
    long long v[8];
    int n = snprintf(want, sizeof want, "cpu%d ", cpu);
    long long out = -1;
    FILE *f = fopen("/proc/stat", "r");
    if (!f || cpu < 0)
        return f ? (fclose(f), -1) : -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, want, (size_t)n) == 0 &&
            sscanf(line + n, "%lld %lld %lld %lld %lld %lld %lld %lld",
                   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
            out = v[7];
            break;
        }
    fclose(f);
    return out;
}

/* sum_exec_runtime and run_delay (ns) of a not yet reaped child. */
static void schedstat(pid_t pid, long long *exec_ns, long long *delay_ns)
{
    char path[64];
    if (pid == 0)
        snprintf(path, sizeof path, "/proc/self/schedstat");
    else
        snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *f = fopen(path, "r");
    *exec_ns = *delay_ns = -1;
    if (!f)
        return;
    if (fscanf(f, "%lld %lld", exec_ns, delay_ns) != 2)
        *exec_ns = *delay_ns = -1;
    fclose(f);
}

/* This process's own run_delay (ns), -1 if unknown. */
static long long own_delay(void)
{
    long long exec_ns, delay_ns;
    schedstat(0, &exec_ns, &delay_ns);
    return delay_ns;
}

/* se.nr_migrations of a not yet reaped child (needs CONFIG_SCHED_DEBUG), -1 if absent. */
static long long migrations(pid_t pid)
{
    char path[64], line[256];
    long long n = -1;
    snprintf(path, sizeof path, "/proc/%d/sched", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "se.nr_migrations", 16) == 0) {
            char *colon = strchr(line, ':');
            if (colon && sscanf(colon + 1, "%lld", &n) != 1)
                n = -1;
            break;
        }
    fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: launch RESULT_FILE PROGRAM [ARGS...]\n");
        return 2;
    }
    struct sigaction on_term = {.sa_handler = stop};  /* no SA_RESTART: waitid returns EINTR */
    sigaction(SIGTERM, &on_term, NULL);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    int cpu = sched_getcpu();
    long long steal_before = steal_ticks(cpu);
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
    workload = pid;
    if (stopping)  /* SIGTERM came before the workload had a pid */
        kill(pid, SIGKILL);
    /* From here the launcher only sleeps until the workload exits: any wait for the CPU it
     * has after this is the wake-up after the exit. (Between fork and here it may wait while
     * the workload runs on the same CPU: that is the workload's time, not a disturbance.) */
    long long own_before = own_delay();
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0)
        if (errno != EINTR) {
            perror("flagsweep launch: waitid");
            return 2;
        }
    long long wall = now_ns() - start;
    long long own_after = own_delay();
    long long exec_ns, delay_ns;
    schedstat(pid, &exec_ns, &delay_ns);
    long long moved = migrations(pid);
    long long steal_after = steal_ticks(cpu);
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) {
            perror("flagsweep launch: wait4");
            return 2;
        }
    int leftover = end_leftovers();
    /* Created new, never through a link found under its name: run as root, a planted link
     * would have this truncate the file it points to. flagsweep removes the old report first. */
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *out = fd < 0 ? NULL : fdopen(fd, "w");
    if (!out) {
        perror(argv[1]);
        return 2;
    }
    long long steal = steal_before >= 0 && steal_after >= 0 ? steal_after - steal_before : -1;
    long long own = own_before >= 0 && own_after >= 0 ? own_after - own_before : -1;
    fprintf(out, "status %d wall_ns %lld utime_us %ld stime_us %ld maxrss_kb %ld "
                 "nvcsw %ld nivcsw %ld minflt %ld majflt %ld "
                 "exec_ns %lld run_delay_ns %lld own_delay_ns %lld migrations %lld "
                 "steal_ticks %lld cpu %d leftover %d\n",
            status, wall, us(ru.ru_utime), us(ru.ru_stime), ru.ru_maxrss,
            ru.ru_nvcsw, ru.ru_nivcsw, ru.ru_minflt, ru.ru_majflt,
            exec_ns, delay_ns, own, moved, steal, cpu, leftover);
    return fclose(out) == 0 ? 0 : 2;
}
