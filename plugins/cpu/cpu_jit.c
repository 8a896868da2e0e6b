/*
 * cpu_jit.c - the hot-program compiler: a FUSED program that runs often is
 * turned into C, compiled by the system's C compiler into a shared object and
 * loaded, and then runs as one loop instead of one row call per step.
 *
 * Why: the interpreter (cpu_fused.c) runs each step over a chunk of 256
 * elements through the step's row function, with the chunk's values kept in
 * L1 slots between steps. For long programs of cheap steps that is 1.5-2x the
 * memory-bound time of one hand-written loop (docs/performance.md, the
 * elementwise workload). The generated loop keeps values in registers, folds
 * a reduced output straight into REDUCE's lanes and writes each output once.
 *
 * Same bits: a step whose row is one exact expression (cpu_ops.h: + - * /,
 * sqrt, min, max, rounding...) is computed inline with that very expression,
 * the text of cpu_ops.h being the top of every generated file, compiled with
 * -ffp-contract=off so that no product and sum are merged into one rounding.
 * A step whose row is one of cpu_vmath.c's (exp, log, expm1, log1p, sin, cos,
 * tanh, erf through libmvec) is compiled inline too, in the row's own blocks,
 * where the generated loop calls the very same libmvec variants as the row: the
 * same vector ABI letter for this process's instruction set, and the GCC
 * version that built the row (the generated file checks it and calls the row
 * under any other compiler); flags -fopenmp-simd -fno-math-errno. Every
 * other step (pow, sigmoid... whose libm calls could round differently in
 * another compiled loop) is computed by calling its own row function on the
 * chunk, as the interpreter does. So a compiled program gives the
 * interpreter's values bit for bit, as the ABI promises for FUSED against
 * separate calls; test_cpu_jit.c checks it on random programs and layouts
 * against an engine with jit=off.
 *
 * What is compiled: f32 and f64 programs, with or without a reduced output, and
 * in place (out[0] one of the inputs, as the core runs an update whose old value
 * is dead): there, as in the interpreter, the result is kept in a chunk array and
 * copied out once every step has read the chunk, and no pointer is restrict. The
 * compiled code runs on dense rows (every operand of stride 1); other rows stay
 * interpreted. A program is known by a key of its prepared form (dtype, steps,
 * where each register lives, in place or not); the engine keeps a table of keys, counts the runs of calls of at
 * least CPU_JIT_MIN_ELEMS elements and compiles a program when it runs again
 * once those runs have covered CPU_JIT_ELEMS elements (jit=auto: a compile pays
 * for itself only on work that repeats), or at once (jit=always). A compile takes tens of
 * milliseconds; it runs outside the table's lock, and calls meanwhile run interpreted. A program
 * whose compile fails (no compiler, a compiler error) is marked and interpreted from then on; under
 * jit=always the call fails instead (TF_ERR_BACKEND), with nothing written.
 *
 * The compiler: the option jit_cc (default "cc"), run with posix_spawnp as
 * `cc -std=c11 -O3 -ffp-contract=off -fPIC -shared <isa> [<vector maths>]` on a file in a
 * fresh private folder under $TMPDIR (or /tmp), which is removed once the
 * object is loaded. <isa> is what this process's view of the processor offers
 * (on x86-64 -mavx2 -mfma, and the AVX-512 flags where present), asked with
 * __builtin_cpu_supports rather than left to the compiler's -march=native: the
 * compiler is a separate process and sees the real processor, which is not
 * the one the engine runs on under an emulator or a checker such as valgrind
 * (code built for it would stop on an illegal instruction). The exact steps
 * round the same under every instruction set (-ffp-contract=off: no fused
 * multiply-adds), so the choice changes speed, never results.
 *
 * The files: this one keeps the table of programs, runs the compiler and loads
 * what it made; cpu_jit_gen.c writes the code (and the key), cpu_jit_store.c
 * keeps compiled programs between processes.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu_fused.h"
#include "cpu_jit_gen.h"
#include "cpu_jit_store.h"

extern char **environ;

#define JIT_MAX_PROGRAMS 256 /* keys kept; further programs stay interpreted */

enum {
    JIT_COUNTING = 0,
    JIT_COMPILING,
    JIT_READY,
    JIT_FAILED
};

typedef struct jit_entry {
    int n;
    int32_t key[JIT_KEY_WORDS];
    uint64_t hash;
    int state; /* JIT_* */
    int runs;
    int64_t elems; /* elements of the runs counted */
    cpu_err why;   /* JIT_FAILED: the compile's error */
    void *handle;
    cpu_jit_fn fn, fn_lanes;
} jit_entry;

struct cpu_jit {
    const tf_host_api *host;
    int mode;
    char cc[256];
    cpu_jit_store store; /* compiled programs kept between processes */
    pthread_mutex_t mu;
    int count;
    jit_entry *entries[JIT_MAX_PROGRAMS];
};

/* ---- compiling and loading ----------------------------------------------------- */

static int write_file(const char *path, const char *text, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return -1;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    return close(fd);
}

/* Runs the compiler on dir/p.c into dir/p.so, its messages into dir/cc.log. */
static int run_compiler(const char *cc, const char *dir, cpu_err *err)
{
    char src[600], obj[600], log[600];
    snprintf(src, sizeof src, "%s/p.c", dir);
    snprintf(obj, sizeof obj, "%s/p.so", dir);
    snprintf(log, sizeof log, "%s/cc.log", dir);
    char *argv[24] = {(char *)cc};
    int argc = 1;
    for (const char *const *a = tf__cpu_jit_cc_args; *a != NULL; a++) {
        argv[argc++] = (char *)*a;
    }
    argv[argc++] = "-o";
    argv[argc++] = obj;
    argv[argc++] = src;
    argv[argc++] = "-lm";
    for (const char *const *f = tf__cpu_jit_isa_flags(); *f != NULL; f++) {
        argv[argc++] = (char *)*f;
    }
    for (const char *const *f = tf__cpu_jit_vmath_flags(); *f != NULL; f++) {
        argv[argc++] = (char *)*f;
    }
    argv[argc] = NULL;
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        return tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: jit: cannot set up the compiler's run");
    }
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, cc, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        return tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: jit: cannot run the compiler \"%s\": %s", cc,
                            strerror(rc));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: jit: waiting for \"%s\": %s", cc,
                                strerror(errno));
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return 0;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        /* posix_spawnp's child could not exec the compiler: where the C library
           cannot hand the error back to the parent (a fork-based spawn, as
           under valgrind) the child exits 127, the shell's "not found". */
        return tf__cpu_fail(err, TF_ERR_BACKEND,
                            "cpu: jit: cannot run the compiler \"%s\": exit status 127", cc);
    }
    char first[160] = "";
    FILE *f = fopen(log, "r");
    if (f != NULL) {
        if (fgets(first, sizeof first, f) == NULL) {
            first[0] = '\0';
        }
        fclose(f);
        first[strcspn(first, "\n")] = '\0';
    }
    return tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: jit: \"%s\" failed (status %d): %s", cc,
                        WIFEXITED(status) ? WEXITSTATUS(status) : -1, first);
}

/* The program's functions from the loaded object h into *e: 0, or 1 with h closed. */
static int take_functions(const fused_prog *fp, void *h, jit_entry *e)
{
    /* POSIX: a function pointer read through a void * (dlsym's documented use) */
    void *f = dlsym(h, "tfjit_run");
    void *fl = fp->red_reg >= 0 ? dlsym(h, "tfjit_run_lanes") : NULL;
    if (f == NULL || (fp->red_reg >= 0 && fl == NULL)) {
        dlclose(h);
        return 1;
    }
    e->handle = h;
    memcpy(&e->fn, &f, sizeof f);
    memcpy(&e->fn_lanes, &fl, sizeof fl);
    return 0;
}

/* fp's program, whose source is b, from the store into *e: 1 when it is there (and
   loads), else 0. */
static int jit_probe(const cpu_jit *jit, const fused_prog *fp, const cpu_jit_src *b, jit_entry *e)
{
    char name[32];
    tf__cpu_jit_store_name(b, name);
    void *h = tf__cpu_jit_store_load(&jit->store, name, b->p);
    return h != NULL && take_functions(fp, h, e) == 0;
}

/*
 * Compiles and loads fp's program, whose source is b, into *e (fn, fn_lanes,
 * handle). With a store (stored), it is built in a private folder inside the
 * store's and the object renamed into place before it is loaded from there; else
 * in one under $TMPDIR, removed afterwards.
 */
static int jit_compile(const cpu_jit *jit, const fused_prog *fp, const cpu_jit_src *b, int stored,
                       jit_entry *e, cpu_err *err)
{
    char name[32];
    tf__cpu_jit_store_name(b, name);
    size_t len = 0;
    char *text = tf__cpu_jit_with_own_text(b, &len);
    if (text == NULL) {
        return tf__cpu_fail(err, TF_ERR_OUT_OF_MEMORY, "cpu: jit: no memory for the source");
    }
    const char *tmp = getenv("TMPDIR");
    const char *base = stored ? jit->store.dir : tmp != NULL && tmp[0] ? tmp : "/tmp";
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", base, stored ? "tmp-XXXXXX" : "tenferro-jit-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        free(text);
        return tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: jit: cannot make a folder under %s: %s",
                            base, strerror(errno));
    }
    char path[600];
    int rc = 0;
    snprintf(path, sizeof path, "%s/p.c", dir);
    if (write_file(path, text, len) != 0) {
        rc = tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: jit: cannot write %s", path);
    }
    free(text);
    if (rc == 0) {
        rc = run_compiler(jit->cc, dir, err);
    }
    void *h = NULL;
    if (rc == 0) {
        snprintf(path, sizeof path, "%s/p.so", dir);
        char dest[sizeof jit->store.dir + 64];
        snprintf(dest, sizeof dest, "%s/%s", jit->store.dir, name);
        /* into the store, whole, this user's alone (whatever the umask); loaded from there */
        const int moved = stored && chmod(path, 0700) == 0 && rename(path, dest) == 0;
        if (moved) {
            h = tf__cpu_jit_store_load(&jit->store, name, b->p);
        }
        if (h == NULL) {
            h = dlopen(moved ? dest : path, RTLD_NOW | RTLD_LOCAL);
        }
        if (h == NULL) {
            const char *why = dlerror();
            rc = tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: jit: cannot load the program: %s",
                              why != NULL ? why : "?");
        }
    }
    if (rc == 0 && take_functions(fp, h, e) != 0) {
        rc = tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: jit: the program lacks its functions");
    }
    static const char *const files[] = {"p.c", "p.so", "cc.log"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return rc;
}

/* ---- the table of programs ----------------------------------------------------- */

tf_status tf__cpu_jit_create(const tf_host_api *host, int mode, const char *cc, const char *cache,
                             cpu_jit **out, cpu_err *err)
{
    *out = NULL;
    if (mode == CPU_JIT_OFF) {
        return TF_OK;
    }
    cpu_jit *jit = host->alloc(host->ctx, sizeof *jit, 0);
    if (jit == NULL) {
        tf__cpu_fail(err, TF_ERR_OUT_OF_MEMORY, "cpu: create: cannot allocate the jit table");
        return TF_ERR_OUT_OF_MEMORY;
    }
    memset(jit, 0, sizeof *jit);
    jit->host = host;
    jit->mode = mode;
    snprintf(jit->cc, sizeof jit->cc, "%s", cc != NULL && cc[0] ? cc : "cc");
    if (tf__cpu_jit_store_init(&jit->store, cache, err) != 0) {
        host->free(host->ctx, jit);
        return err->status;
    }
    if (pthread_mutex_init(&jit->mu, NULL) != 0) {
        host->free(host->ctx, jit);
        tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: create: cannot make the jit table's lock");
        return TF_ERR_BACKEND;
    }
    *out = jit;
    return TF_OK;
}

void tf__cpu_jit_destroy(cpu_jit *jit)
{
    if (jit == NULL) {
        return;
    }
    for (int i = 0; i < jit->count; i++) {
        if (jit->entries[i]->handle != NULL) {
            dlclose(jit->entries[i]->handle);
        }
        jit->host->free(jit->host->ctx, jit->entries[i]);
    }
    pthread_mutex_destroy(&jit->mu);
    jit->host->free(jit->host->ctx, jit);
}

/* The entry of key (made if there is room), under the lock; NULL if the table is full. */
static jit_entry *jit_find(cpu_jit *jit, const int32_t *key, int n, uint64_t h)
{
    for (int i = 0; i < jit->count; i++) {
        jit_entry *e = jit->entries[i];
        if (e->hash == h && e->n == n && memcmp(e->key, key, (size_t)n * sizeof key[0]) == 0) {
            return e;
        }
    }
    if (jit->count == JIT_MAX_PROGRAMS) {
        return NULL;
    }
    jit_entry *e = jit->host->alloc(jit->host->ctx, sizeof *e, 0);
    if (e == NULL) {
        return NULL;
    }
    memset(e, 0, sizeof *e);
    e->n = n;
    memcpy(e->key, key, (size_t)n * sizeof key[0]);
    e->hash = h;
    e->state = JIT_COUNTING;
    jit->entries[jit->count++] = e;
    return e;
}

/* Under the table's lock: what a probe or a compile made of e (its loaded program, or
   none), its new state and, when it failed, why. */
static void entry_settle(cpu_jit *jit, jit_entry *e, const jit_entry *made, int state,
                         const cpu_err *why)
{
    pthread_mutex_lock(&jit->mu);
    e->handle = made->handle;
    e->fn = made->fn;
    e->fn_lanes = made->fn_lanes;
    e->state = state;
    if (why != NULL) {
        e->why = *why;
    }
    pthread_mutex_unlock(&jit->mu);
}

int tf__cpu_jit_lookup(const cpu_engine *eng, fused_prog *fp, int64_t numel, cpu_err *err)
{
    cpu_jit *jit = eng->jit_cache;
    fp->jit = fp->jit_lanes = NULL;
    if (jit == NULL || !tf__cpu_jit_covers(fp) ||
        (jit->mode == CPU_JIT_AUTO && numel < CPU_JIT_MIN_ELEMS)) {
        return 0;
    }
    int32_t key[JIT_KEY_WORDS];
    const int n = tf__cpu_jit_key(fp, key);
    const uint64_t h = tf__cpu_jit_key_hash(key, n);
    pthread_mutex_lock(&jit->mu);
    jit_entry *e = jit_find(jit, key, n, h);
    int compile = 0, probe = 0;
    if (e != NULL && e->state == JIT_COUNTING) {
        /* the first run: the store may have it (made by an earlier process) */
        probe = e->runs == 0 && tf__cpu_jit_store_usable(&jit->store);
        e->runs++;
        e->elems += numel;
        compile =
            !probe && (jit->mode == CPU_JIT_ALWAYS || (e->runs >= 2 && e->elems >= CPU_JIT_ELEMS));
        e->state = compile || probe ? JIT_COMPILING : JIT_COUNTING;
    }
    const int state = e != NULL ? e->state : JIT_FAILED;
    if (state == JIT_READY) {
        fp->jit = e->fn;
        fp->jit_lanes = e->fn_lanes;
    }
    const int failed = e != NULL && state == JIT_FAILED && jit->mode == CPU_JIT_ALWAYS;
    if (failed) {
        *err = e->why;
    }
    const int stored = jit->store.state == JIT_STORE_USABLE;
    pthread_mutex_unlock(&jit->mu);
    if (!probe && !compile) {
        return failed;
    }
    /* e is not NULL: it was counting. Its source is made once, for the store and the
       compiler both. */
    jit_entry made = *e;
    cpu_jit_src src;
    cpu_err why;
    int rc = tf__cpu_jit_source(jit->cc, fp, &src, &why), found = 0;
    if (rc == 0 && probe) {
        found = jit_probe(jit, fp, &src, &made);
        compile = !found && jit->mode == CPU_JIT_ALWAYS;
    }
    if (rc == 0 && compile) {
        rc = jit_compile(jit, fp, &src, stored, &made, &why);
    }
    free(src.p);
    const int ready = rc == 0 && (found || compile);
    /* not found and not compiled (jit=auto, a first run): counting again */
    const int next = ready ? JIT_READY : rc != 0 ? JIT_FAILED : JIT_COUNTING;
    entry_settle(jit, e, &made, next, rc != 0 ? &why : NULL);
    if (ready) {
        fp->jit = made.fn;
        fp->jit_lanes = made.fn_lanes;
        return 0;
    }
    if (rc != 0 && jit->mode == CPU_JIT_ALWAYS) {
        *err = why;
        return 1;
    }
    return 0;
}
