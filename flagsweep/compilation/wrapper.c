/* flagsweep's compiler wrapper: compile from a snapshot of what the compiler reads, then record.
 *
 * Built by flagsweep/compilation/wrapper.py once per real compiler, with REAL and LAUNCHER baked
 * in, and the tables of how that compiler reads a command line (cmdline.py: which options take
 * the next word as their value, the language of a file by its suffix, the language a snapshot
 * of each language is compiled as).
 * Runs LAUNCHER REAL args..., or REAL args... when LAUNCHER is "" or $FLAGSWEEP_CCACHE is "0".
 * Without $FLAGSWEEP_COMPILE_LOG it simply execs. With it, it waits for the command and appends
 *   {"argv": [REAL, args...], "cwd": "...", "exit": N, "outputs": [[file, sha256], ...],
 *    "snapshots": [[source, language, sha256, snapshot], ...]}
 * as one JSON line (a single O_APPEND write, so lines from make -j never interleave). "outputs"
 * hashes each file the command wrote as it left it, so the audit can tell a file rewritten
 * later (even with its mtime put back) from the one written.
 *
 * Snapshots ($FLAGSWEEP_SNAPSHOTS, a folder: set for a variant's build step, never for
 * configure): a compile's sources are not handed to the compiler as they are. Each C (C++,
 * Objective-C) source and each .S is run through the compiler's preprocessor into a file of
 * that folder, and the compile compiles that file (as cpp-output, or as assembler); each
 * source the compiler reads as it is (.s, .i) is copied there first. So the bytes the audit
 * reads for `#pragma GCC optimize` and hashes are the very bytes compiled, headers included:
 * a source or header rewritten for the compile and put back, mtime and all, is still in the
 * snapshot. The file keeps the source's own name, in a folder named by its sha256, so the
 * compiler names its outputs, its profile-guided function names and its debug info's file
 * as before, and ccache keys it by its text. Dependency options (-MD, -MF, ...) move to the
 * preprocessing, which reads the real headers, with the defaults gcc and clang would have
 * derived from -o. A compile that cannot be snapshotted runs as it was and says why
 * ("snapshot_error"); the audit refuses one the binary is made from.
 *
 * Written in C because it runs once per compile: a Python wrapper's start-up cost dominated
 * warm-ccache rebuilds. A command that cannot be recorded fails, so the audit never trusts a
 * log with holes in it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
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
#ifndef VALUED            /* options whose value is the next word(s): {"-I", 1}, ... */
#define VALUED {{0, 0}}
#endif
#ifndef VALUED_PREFIXES   /* families of options each taking the next word */
#define VALUED_PREFIXES {0}
#endif
#ifndef SUFFIXES          /* {".c", "c"}, ...: an input's language by its suffix */
#define SUFFIXES {{0, 0}}
#endif
#ifndef SNAPSHOT          /* {"c", "cpp-output", 1}: compiled as, 1 when preprocessed into it */
#define SNAPSHOT {{0, 0, 0}}
#endif
#ifndef CLANG   /* clang warns of each option a command leaves unused (-E the linker's, a snapshot
                 * -I and -D), an error with -Werror; gcc is silent */
#define CLANG 0
#endif

struct valued { const char *name; int n; };
struct suffix { const char *suffix, *lang; };
struct snapshot_as { const char *lang, *as; int preprocess; };
static const struct valued valued[] = VALUED;
static const char *const valued_prefixes[] = VALUED_PREFIXES;
static const struct suffix suffixes[] = SUFFIXES;
static const struct snapshot_as snapshot_as[] = SNAPSHOT;

static void fail(const char *what)
{
    fprintf(stderr, "flagsweep wrapper: %s: %s\n", what, strerror(errno));
    exit(127);
}

/* ---- SHA-256 (FIPS 180-4) ------------------------------------------------------------------ */

struct sha { uint32_t h[8]; uint64_t len; unsigned char block[64]; size_t used; };

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(struct sha *s, const unsigned char *p)
{
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16
             | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++)
        w[i] = w[i - 16] + (ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3))
             + w[i - 7] + (ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10));
    memcpy(v, s->h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25))
                    + ((v[4] & v[5]) ^ (~v[4] & v[6])) + K[i] + w[i];
        uint32_t t2 = (ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22))
                    + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof *v);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++)
        s->h[i] += v[i];
}

static void sha_init(struct sha *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->used = 0;
}

static void sha_add(struct sha *s, const unsigned char *p, size_t n)
{
    s->len += n;
    while (n) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used == 64) {
            sha_block(s, s->block);
            s->used = 0;
        }
    }
}

static void sha_hex(struct sha *s, char hex[65])
{
    uint64_t bits = s->len * 8;
    unsigned char pad = 0x80, zero = 0, len[8];
    sha_add(s, &pad, 1);
    while (s->used != 56)
        sha_add(s, &zero, 1);
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha_add(s, len, 8);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 8 * i, 9, "%08x", s->h[i]);
}

/* The sha256 of what fd reads, copied on to out unless out is -1; 0, or -1 on an error. */
static int sha_fd(int fd, int out, char hex[65])
{
    struct sha s;
    unsigned char chunk[1 << 16];
    ssize_t n;
    sha_init(&s);
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        sha_add(&s, chunk, (size_t)n);
        for (ssize_t done = 0; out >= 0 && done < n;) {
            ssize_t w = write(out, chunk + done, (size_t)(n - done));
            if (w < 0 && errno != EINTR)
                return -1;
            done += w > 0 ? w : 0;
        }
    }
    sha_hex(&s, hex);
    return 0;
}

static int sha_file(const char *path, char hex[65])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return -1;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && sha_fd(fd, -1, hex) == 0;
    close(fd);
    return ok ? 0 : -1;
}

/* ---- the JSON line ------------------------------------------------------------------------- */

struct buf { char *data; size_t len, cap; };

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
        if (!b->data) fail("memory");
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

static void put_text(struct buf *b, const char *s) { put(b, s, strlen(s)); }

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

/* ---- reading the command line, as cmdline.py does ------------------------------------------- */

enum role { OPTION, VALUE, INPUT };
struct word { enum role role; const char *lang; int values; };

static int arity(const char *option)
{
    for (const struct valued *v = valued; v->name; v++)
        if (strcmp(v->name, option) == 0)
            return v->n;
    for (const char *const *p = valued_prefixes; *p; p++)
        if (strncmp(option, *p, strlen(*p)) == 0)
            return 1;
    return 0;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static const char *by_suffix(const char *path)
{
    const char *dot = strrchr(base_name(path), '.');
    for (const struct suffix *s = suffixes; dot && s->suffix; s++)
        if (strcmp(s->suffix, dot) == 0)
            return s->lang;
    return NULL;
}

/* Each word's role; an input's language from the -x in force, else its suffix. */
static struct word *parse(int argc, char **argv)
{
    struct word *w = calloc((size_t)argc + 1, sizeof *w);
    const char *forced = NULL;
    if (!w) fail("memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            w[i].role = INPUT;
            w[i].lang = forced ? forced : by_suffix(a);
            continue;
        }
        int n = arity(a);
        if (i + n >= argc)
            n = argc - 1 - i;
        w[i].role = OPTION;
        w[i].values = n;
        const char *lang = strcmp(a, "-x") == 0 && n ? argv[i + 1]
                         : strncmp(a, "-x", 2) == 0 && a[2] ? a + 2 : NULL;
        if (lang)
            forced = strcmp(lang, "none") ? lang : NULL;
        for (int k = 1; k <= n; k++)
            w[i + k].role = VALUE;
        i += n;
    }
    return w;
}

static int has(int argc, char **argv, struct word *w, const char *option)
{
    for (int i = 1; i < argc; i++)
        if (w[i].role == OPTION && strcmp(argv[i], option) == 0)
            return 1;
    return 0;
}

/* The -o file ("-o FILE" or "-oFILE", the last one wins, as in gcc). */
static const char *output_of(int argc, char **argv, struct word *w)
{
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (w[i].role != OPTION)
            continue;
        if (strcmp(argv[i], "-o") == 0 && w[i].values)
            out = argv[i + 1];
        else if (strncmp(argv[i], "-o", 2) == 0 && argv[i][2] && !w[i].values)
            out = argv[i] + 2;
    }
    return out;
}

static const struct snapshot_as *snapshot_of(const char *lang)
{
    for (const struct snapshot_as *s = snapshot_as; lang && s->lang; s++)
        if (strcmp(s->lang, lang) == 0)
            return s;
    return NULL;
}

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Options that make dependency files: they go to the preprocessing, which reads the headers. */
static int dependency_option(const char *a)
{
    return !strcmp(a, "-MD") || !strcmp(a, "-MMD") || !strcmp(a, "-MP") || !strcmp(a, "-MG")
        || starts(a, "-MF") || starts(a, "-MT") || starts(a, "-MQ") || starts(a, "-Wp,-M");
}

/* Options the preprocessing leaves out: what compiles or writes files of the compile. */
static int compile_only(const char *a)
{
    return !strcmp(a, "-c") || !strcmp(a, "-S") || starts(a, "-o") || starts(a, "-x")
        || starts(a, "-save-temps") || !strcmp(a, "-MJ") || starts(a, "-ftime-trace")
        || !strcmp(a, "-aux-info");
}

/* ---- running ---------------------------------------------------------------------------------- */

/* Run args with stdout to out (unless -1) and wait; its exit code, or 128 + its signal. */
static int run(char **args, int out)
{
    pid_t parent = getpid(), child = fork();
    if (child < 0)
        fail("fork");
    if (child == 0) {
        /* The compiler never outlives the wrapper that would record it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        if (out >= 0 && dup2(out, 1) < 0)
            _exit(127);
        execv(args[0], args);
        fprintf(stderr, "flagsweep wrapper: cannot run %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR)
            fail("waitpid");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- snapshots -------------------------------------------------------------------------------- */

struct snap { int index; const char *lang; char sha[65]; char *path; };

struct compile {
    int argc;
    char **argv;
    struct word *w;
    const char *out, *folder;
    struct snap *snaps;
    int count;
    char error[512];
};

static char *joined(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (!s) fail("memory");
    snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

/* path with its suffix (in its last component) replaced by suffix: gcc's dependency file and
 * object names. */
static char *with_suffix(const char *path, const char *suffix)
{
    const char *dot = strrchr(base_name(path), '.');
    size_t keep = dot ? (size_t)(dot - path) : strlen(path);
    char *s = malloc(keep + strlen(suffix) + 1);
    if (!s) fail("memory");
    memcpy(s, path, keep);
    strcpy(s + keep, suffix);
    return s;
}

/* Whether gcc would read the source's comments: a FALLTHROUGH comment silences
 * -Wimplicit-fallthrough (on with -Wextra), as ccache's keep_comments_cpp knows, so the
 * snapshot keeps comments then (-C), and only then: they make it three times the size. */
static int fall_through_comments(struct compile *c)
{
    int on = 0;
    for (int j = 1; j < c->argc; j++) {
        const char *a = c->argv[j];
        size_t n = strlen(a);
        if (c->w[j].role != OPTION)
            continue;
        if (!strcmp(a, "-Wextra") || !strcmp(a, "-W"))
            on = 1;
        else if (starts(a, "-Wimplicit-fallthrough") || starts(a, "-Werror=implicit-fallthrough"))
            on = strcmp(a + n - 2, "=0") != 0;
        else if (!strcmp(a, "-Wno-implicit-fallthrough"))
            on = 0;
    }
    return on;
}

/* The preprocessing of source i: the command without what compiles or writes the compile's
 * files, with its dependency options and their defaults, as -E of that source alone. */
static char **preprocessing(struct compile *c, int i)
{
    char **e = calloc((size_t)c->argc * 2 + 16, sizeof *e);
    int k = 0, md = 0, mf = 0, mt = 0;
    if (!e) fail("memory");
    e[k++] = REAL;
    for (int j = 1; j < c->argc; j++) {
        const char *a = c->argv[j];
        if (c->w[j].role != OPTION)
            continue;
        md |= !strcmp(a, "-MD") || !strcmp(a, "-MMD");
        mf |= starts(a, "-MF");
        mt |= starts(a, "-MT") || starts(a, "-MQ");
        if (compile_only(a))
            continue;
        for (int v = 0; v <= c->w[j].values; v++)
            e[k++] = c->argv[j + v];
    }
    if (CLANG)
        e[k++] = "-Qunused-arguments";
    else if (fall_through_comments(c) && strcmp(c->w[i].lang, "assembler-with-cpp") != 0)
        e[k++] = "-C";    /* not in assembly, where // is no comment to gas */
    /* -E would name the dependency file and its target after the preprocessed output */
    int one = c->out && (has(c->argc, c->argv, c->w, "-c") || has(c->argc, c->argv, c->w, "-S"));
    if (md && !mf) {
        e[k++] = "-MF";
        e[k++] = one ? with_suffix(c->out, ".d") : with_suffix(base_name(c->argv[i]), ".d");
    }
    if (md && !mt && one) {
        e[k++] = "-MQ";
        e[k++] = (char *)c->out;
    }
    e[k++] = "-E";
    e[k++] = "-x";
    e[k++] = (char *)c->w[i].lang;
    e[k++] = c->argv[i];
    return e;
}

/* Source i preprocessed (or copied) into a file of the snapshot folder named by its sha256;
 * 0, or -1 with the reason in c->error. */
static int take(struct compile *c, int i, const struct snapshot_as *as, struct snap *s)
{
    char tmp[4096];
    const char *source = c->argv[i];
    snprintf(tmp, sizeof tmp, "%s/.draft-%d-%d", c->folder, (int)getpid(), i);
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(c->error, sizeof c->error, "cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    int ok;
    if (as->preprocess) {
        char **e = preprocessing(c, i);
        int code = run(e, fd);
        free(e);
        ok = code == 0;
        if (!ok)
            snprintf(c->error, sizeof c->error, "preprocessing %s exited %d", source, code);
        ok = ok && lseek(fd, 0, SEEK_SET) == 0 && sha_fd(fd, -1, s->sha) == 0;
    } else {
        int in = strcmp(source, "-") ? open(source, O_RDONLY | O_CLOEXEC) : 0;
        ok = in >= 0 && sha_fd(in, fd, s->sha) == 0;
        if (!ok)
            snprintf(c->error, sizeof c->error, "cannot read %s: %s", source, strerror(errno));
        if (in > 0)
            close(in);
    }
    close(fd);
    char *folder = joined(c->folder, "/", s->sha);
    if (ok && mkdir(folder, 0755) != 0 && errno != EEXIST) {
        snprintf(c->error, sizeof c->error, "cannot make %s: %s", folder, strerror(errno));
        ok = 0;
    }
    s->path = joined(folder, "/", base_name(source));
    free(folder);
    if (ok && rename(tmp, s->path) != 0) {
        snprintf(c->error, sizeof c->error, "cannot write %s: %s", s->path, strerror(errno));
        ok = 0;
    }
    if (!ok)
        unlink(tmp);
    s->index = i;
    s->lang = c->w[i].lang;
    return ok ? 0 : -1;
}

/* The command compiling the snapshots in place of its sources; NULL (with c->error) when one
 * cannot be taken, and then the command runs as it was. */
static char **snapshotted(struct compile *c, const char *launcher)
{
    char **args = calloc((size_t)c->argc * 5 + 9, sizeof *args);
    int k = 0;
    if (!args) fail("memory");
    c->snaps = calloc((size_t)c->argc, sizeof *c->snaps);
    if (!c->snaps) fail("memory");
    if (launcher)
        args[k++] = (char *)launcher;
    args[k++] = REAL;
    if (CLANG)   /* -I, -D, -include have nothing to do on preprocessed text: no -Werror failure */
        args[k++] = "-Qunused-arguments";
    for (int i = 1; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (c->w[i].role == OPTION) {
            /* dependencies are the preprocessing's; -x is written per input below */
            if (!dependency_option(a) && !starts(a, "-x"))
                for (int v = 0; v <= c->w[i].values; v++)
                    args[k++] = c->argv[i + v];
            i += c->w[i].values;
            continue;
        }
        if (c->w[i].role != INPUT)
            continue;
        const struct snapshot_as *as = snapshot_of(c->w[i].lang);
        if (!c->w[i].lang) {
            args[k++] = (char *)a;   /* the linker's: by its suffix, after an -x none */
            continue;
        }
        if (as) {
            struct snap *s = &c->snaps[c->count];
            if (take(c, i, as, s) != 0) {
                free(args);
                c->count = 0;    /* the command runs as it was: none of them was compiled */
                return NULL;
            }
            c->count++;
            args[k++] = "-x";
            args[k++] = (char *)as->as;
            args[k++] = s->path;
        } else {
            args[k++] = "-x";
            args[k++] = (char *)c->w[i].lang;
            args[k++] = (char *)a;
        }
        args[k++] = "-x";
        args[k++] = "none";
    }
    return args;
}

/* Whether the command compiles (not only preprocesses, links or probes the compiler). */
static int compiles(int argc, char **argv, struct word *w)
{
    if (has(argc, argv, w, "-E") || has(argc, argv, w, "-M") || has(argc, argv, w, "-MM")
        || has(argc, argv, w, "-fsyntax-only"))
        return 0;
    for (int i = 1; i < argc; i++)
        if (w[i].role == INPUT && w[i].lang)
            return 1;
    return 0;
}

/* ---- the record ------------------------------------------------------------------------------- */

static void put_output(struct buf *b, int *listed, const char *file)
{
    char hex[65];
    if (sha_file(file, hex) != 0)
        return;
    put_text(b, (*listed)++ ? ", [" : "[");
    put_string(b, file);
    put_text(b, ", ");
    put_string(b, hex);
    put_text(b, "]");
}

/* The files the command wrote: its -o, else <stem>.o (.s with -S) per source, else a.out. */
static void put_outputs(struct buf *b, struct compile *c)
{
    int listed = 0, S = has(c->argc, c->argv, c->w, "-S");
    put_text(b, ", \"outputs\": [");
    if (c->out) {
        put_output(b, &listed, c->out);
    } else if (S || has(c->argc, c->argv, c->w, "-c")) {
        for (int i = 1; i < c->argc; i++) {
            if (c->w[i].role != INPUT || !c->w[i].lang || !strcmp(c->argv[i], "-"))
                continue;
            char *name = with_suffix(base_name(c->argv[i]), S ? ".s" : ".o");
            put_output(b, &listed, name);
            free(name);
        }
    } else {
        put_output(b, &listed, "a.out");
    }
    put_text(b, "]");
}

static void record(const char *log, struct compile *c, int exit_code)
{
    struct buf b = {0};
    char cwd[4096], num[64];
    put_text(&b, "{\"argv\": [");
    put_string(&b, REAL);
    for (int i = 1; i < c->argc; i++) {
        put_text(&b, ", ");
        put_string(&b, c->argv[i]);
    }
    put_text(&b, "], \"cwd\": ");
    put_string(&b, getcwd(cwd, sizeof cwd) ? cwd : "?");
    snprintf(num, sizeof num, ", \"exit\": %d", exit_code);
    put_text(&b, num);
    put_outputs(&b, c);
    if (c->error[0]) {
        put_text(&b, ", \"snapshot_error\": ");
        put_string(&b, c->error);
    }
    if (c->count) {
        put_text(&b, ", \"snapshots\": [");
        for (int i = 0; i < c->count; i++) {
            struct snap *s = &c->snaps[i];
            put_text(&b, i ? ", [" : "[");
            put_string(&b, c->argv[s->index]);
            put_text(&b, ", ");
            put_string(&b, s->lang);
            put_text(&b, ", ");
            put_string(&b, s->sha);
            put_text(&b, ", ");
            put_string(&b, s->path);
            put_text(&b, "]");
        }
        put_text(&b, "]");
    }
    put_text(&b, "}\n");
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
    const char *ccache = getenv("FLAGSWEEP_CCACHE");
    const char *folder = getenv("FLAGSWEEP_SNAPSHOTS");
    const char *launcher = LAUNCHER[0] && !(ccache && strcmp(ccache, "0") == 0) ? LAUNCHER : NULL;
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args) fail("memory");
    int k = 0;
    if (launcher)
        args[k++] = (char *)launcher;
    args[k++] = REAL;
    for (int i = 1; i < argc; i++)
        args[k++] = argv[i];
    if (!(log && *log)) {
        execv(args[0], args);
        fprintf(stderr, "flagsweep wrapper: cannot run %s: %s\n", args[0], strerror(errno));
        return 127;
    }
    struct compile c = {argc, argv, parse(argc, argv), NULL, folder, NULL, 0, ""};
    c.out = output_of(argc, argv, c.w);
    char **compile = NULL;
    if (folder && *folder && compiles(argc, argv, c.w))
        compile = snapshotted(&c, launcher);
    int code = run(compile ? compile : args, -1);
    record(log, &c, code);
    if (code > 128) {  /* ended by a signal: end the same way, so make and Ninja see it */
        signal(code - 128, SIG_DFL);
        raise(code - 128);
    }
    return code;
}
