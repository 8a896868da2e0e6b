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
 * -ffp-contract=off so that no product and sum are merged into one rounding;
 * every other step (exp, log, tanh, pow, sigmoid... whose libm or libmvec
 * calls could round differently in another compiled loop) is computed by
 * calling its own row function on the chunk, as the interpreter does. So a
 * compiled program gives the interpreter's values bit for bit, as the ABI
 * promises for FUSED against separate calls; test_cpu_jit.c checks it on
 * random programs and layouts against an engine with jit=off.
 *
 * What is compiled: f32 and f64 programs, with or without a reduced output, and
 * in place (out[0] one of the inputs, as the core runs an update whose old value
 * is dead): there, as in the interpreter, the result is kept in a chunk array and
 * copied out once every step has read the chunk, and no pointer is restrict. The
 * compiled code runs on dense rows (every operand of stride 1); other rows stay
 * interpreted. A program is
 * known by a key of its prepared form (dtype, steps, where each register
 * lives); the engine keeps a table of keys, counts the runs of calls of at
 * least CPU_JIT_MIN_ELEMS elements and compiles a program when it runs again
 * once those runs have covered CPU_JIT_ELEMS elements (jit=auto: a compile pays
 * for itself only on work that repeats), or at once (jit=always). A compile takes tens of
 * milliseconds; it runs outside the table's lock, and calls meanwhile run interpreted. A program
 * whose compile fails (no compiler, a compiler error) is marked and interpreted from then on; under
 * jit=always the call fails instead (TF_ERR_BACKEND), with nothing written.
 *
 * The compiler: the option jit_cc (default "cc"), run with posix_spawnp as
 * `cc -std=c11 -O3 -ffp-contract=off -fPIC -shared <isa>` on a file in a
 * fresh private folder under $TMPDIR (or /tmp), which is removed once the
 * object is loaded. <isa> is what this process's view of the processor offers
 * (on x86-64 -mavx2 -mfma, and the AVX-512 flags where present), asked with
 * __builtin_cpu_supports rather than left to the compiler's -march=native: the
 * compiler is a separate process and sees the real processor, which is not
 * the one the engine runs on under an emulator or a checker such as valgrind
 * (code built for it would stop on an illegal instruction). The exact steps
 * round the same under every instruction set (-ffp-contract=off: no fused
 * multiply-adds), so the choice changes speed, never results.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu_fused.h"
#include "cpu_jit_store.h"
#include "cpu_ops.h"
#include "cpu_ops_text.h" /* tf__cpu_ops_text: cpu_ops.h as a string (built by CMake) */

extern char **environ;

#define JIT_CHUNK 256          /* elements per chunk of the generated loop */
#define JIT_KEY_WORDS 160      /* a key's words, at most (see jit_key) */
#define JIT_MAX_PROGRAMS 256   /* keys kept; further programs stay interpreted */
#define JIT_SOURCE_BYTES 65536 /* a generated file, at most */
/* The calling convention of a compiled program: tfjit_run's parameters, the order of
   p (outputs, then inputs), rows[k] the row of step k. Named in every generated file's
   first line, so that a stored program (cpu_jit_store.c) made under another is never
   loaded: bump it with any change to them. */
#define JIT_CALL_VERSION 1

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

/* ---- which steps are compiled inline ------------------------------------------ */

#define UNARY_NAME(OP, E32, E64) [TF_UNARY_##OP] = #OP,
static const char *const inline_unary[TF_UNARY_COUNT_] = {CPU_UNARY_EXACT(UNARY_NAME)};
#undef UNARY_NAME
#define BINARY_NAME(OP, E) [TF_BINARY_##OP] = #OP,
static const char *const inline_binary[TF_BINARY_COUNT_] = {CPU_BINARY_EXACT(BINARY_NAME)};
#undef BINARY_NAME
#define REDUCE_NAME(OP, E) [TF_REDUCE_##OP] = #OP,
static const char *const reduce_name[TF_REDUCE_COUNT_] = {CPU_REDUCE_FLOAT(REDUCE_NAME)};
#undef REDUCE_NAME

/* The inline name of step st (its u_ or b_ function in the generated file), or NULL:
   the step calls its row function. */
static const char *inline_name(const fused_step *st)
{
    if (st->nsrc == 2) {
        return st->op < TF_BINARY_COUNT_ ? inline_binary[st->op] : NULL;
    }
    return st->op < TF_UNARY_COUNT_ ? inline_unary[st->op] : NULL;
}

/* Whether the compiler covers the prepared program at all. */
static int jit_covers(const fused_prog *fp)
{
    if ((fp->dtype != TF_F32 && fp->dtype != TF_F64) || fp->n_steps == 0) {
        return 0;
    }
    return fp->red_reg < 0 || fp->red_op < TF_REDUCE_COUNT_;
}

/* ---- the key of a prepared program --------------------------------------------- */

/* Where register r lives, as far as the generated code cares: output operand o (>= 0),
   an immediate (-2 - j), or anywhere else (-1). */
static int key_loc(const fused_prog *fp, int r)
{
    const int where = fp->loc[r];
    if (where >= FUSED_LOC_IMM) {
        return -2 - (where - FUSED_LOC_IMM);
    }
    return where >= 0 && where < fp->n_out ? where : -1;
}

static int jit_key(const fused_prog *fp, int32_t *key)
{
    int n = 0;
    key[n++] = (int32_t)fp->dtype;
    key[n++] = fp->n_in;
    key[n++] = fp->n_out;
    key[n++] = fp->n_steps;
    key[n++] = fp->n_streamed;
    key[n++] = fp->red_reg;
    key[n++] = (int32_t)fp->red_op;
    key[n++] = fp->red_buf;
    key[n++] = fp->in_place;
    for (int o = 0; o < fp->n_streamed; o++) {
        key[n++] = fp->streamed_reg[o];
    }
    for (int k = 0; k < fp->n_steps; k++) {
        const fused_step *st = &fp->steps[k];
        key[n++] = (int32_t)st->op * 4 + st->nsrc;
        key[n++] = st->src[0];
        key[n++] = st->nsrc == 2 ? st->src[1] : 0;
        key[n++] = st->dst;
        key[n++] = key_loc(fp, st->src[0]);
        key[n++] = st->nsrc == 2 ? key_loc(fp, st->src[1]) : 0;
        key[n++] = key_loc(fp, st->dst);
    }
    return n; /* at most 9 + 8 + 7 * 16 < JIT_KEY_WORDS */
}

static uint64_t key_hash(const int32_t *key, int n)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a over the words */
    for (int i = 0; i < n; i++) {
        h = (h ^ (uint32_t)key[i]) * 1099511628211u;
    }
    return h;
}

/* ---- code generation ----------------------------------------------------------- */

typedef struct src_buf {
    char *p;
    size_t len, cap;
    int overflow;
} src_buf;

static void put(src_buf *b, const char *fmt, ...) CPU_PRINTF(2, 3);
static void put(src_buf *b, const char *fmt, ...)
{
    if (b->overflow) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= b->cap - b->len) {
        b->overflow = 1;
        return;
    }
    b->len += (size_t)w;
}

/* The code's view of the program: per register, where its value is found. */
typedef struct gen_ctx {
    const fused_prog *fp;
    int lanes;           /* generating the lanes form */
    int seg[FUSED_REGS]; /* the segment that computes a step register inline, else -1 */
    int out[FUSED_REGS]; /* the output operand a step register is stored to, or -1 */
    int arr[FUSED_REGS]; /* whether it also lives in a chunk array a<r> */
} gen_ctx;

/* An operand read at element e of the chunk inside segment `seg`. */
static void put_read(src_buf *b, const gen_ctx *g, int r, int seg)
{
    const fused_prog *fp = g->fp;
    const int where = fp->loc[r];
    if (r < fp->n_in) {
        put(b, "i%d[c + e]", r);
    } else if (where >= FUSED_LOC_IMM) {
        put(b, "k%d", where - FUSED_LOC_IMM);
    } else if (g->seg[r] >= 0 && g->seg[r] == seg) {
        put(b, "v%d", r);
    } else if (g->out[r] >= 0) {
        put(b, "o%d[c + e]", g->out[r]);
    } else {
        put(b, "a%d[e]", r);
    }
}

/* The chunk's first element of register r, and its stride, for a row call. */
static void put_ptr(src_buf *b, const gen_ctx *g, int r)
{
    const fused_prog *fp = g->fp;
    const int where = fp->loc[r];
    if (r < fp->n_in) {
        put(b, "(char *)(i%d + c)", r);
    } else if (where >= FUSED_LOC_IMM) {
        put(b, "(char *)imm + %d", 8 * (where - FUSED_LOC_IMM));
    } else if (g->out[r] >= 0) {
        put(b, "(char *)(o%d + c)", g->out[r]);
    } else {
        put(b, "(char *)a%d", r);
    }
}

static int stride_of(const gen_ctx *g, int r)
{
    return g->fp->loc[r] >= FUSED_LOC_IMM ? 0 : 1;
}

/* Places every register: segments of consecutive inline steps; a value read outside
   its segment, by a row call, or streamed lives in a chunk array unless it is stored
   in an output anyway. */
static void gen_place(gen_ctx *g)
{
    const fused_prog *fp = g->fp;
    int seg = -1, prev_inline = 0;
    for (int r = 0; r < FUSED_REGS; r++) {
        g->seg[r] = -1;
        g->out[r] = -1;
        g->arr[r] = 0;
    }
    int step_seg[TF_FUSED_MAX_STEPS];
    for (int k = 0; k < fp->n_steps; k++) {
        const fused_step *st = &fp->steps[k];
        const int inl = inline_name(st) != NULL;
        if (!inl || !prev_inline) {
            seg++;
        }
        step_seg[k] = seg;
        prev_inline = inl;
        const int r = st->dst, where = fp->loc[r];
        g->seg[r] = inl ? seg : -1;
        if (where >= 0 && where < fp->n_out && !(g->lanes && where == fp->red_buf)) {
            g->out[r] = where;
        }
        if (!inl && g->out[r] < 0) {
            g->arr[r] = 1;
        }
    }
    for (int o = 0; o < fp->n_streamed; o++) {
        g->out[fp->streamed_reg[o]] = -1;
        g->arr[fp->streamed_reg[o]] = 1;
    }
    if (fp->in_place) { /* the result lives in a slot, copied out once the chunk is read */
        g->arr[fp->steps[fp->n_steps - 1].dst] = 1;
    }
    for (int k = 0; k < fp->n_steps; k++) {
        const fused_step *st = &fp->steps[k];
        const int inl = inline_name(st) != NULL;
        for (int j = 0; j < st->nsrc; j++) {
            const int r = st->src[j];
            if (r >= fp->n_in && fp->loc[r] < FUSED_LOC_IMM && g->out[r] < 0 &&
                (!inl || g->seg[r] != step_seg[k])) {
                g->arr[r] = 1;
            }
        }
    }
}

static void gen_prelude(src_buf *b, const fused_prog *fp)
{
    const int f32 = fp->dtype == TF_F32;
    put(b, "%s\n#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n", tf__cpu_ops_text);
    put(b, "typedef %s T;\n", f32 ? "float" : "double");
    put(b, "typedef int (*row_fn)(const void *, int64_t, char *const *, const int64_t *, void *);\n"
           "typedef void (*stream_fn)(char *, const char *, size_t);\n");
    put(b, "#define U(OP, E32, E64) static inline T u_##OP(T a) { return %s; }\n",
        f32 ? "E32" : "E64");
    put(b, "CPU_UNARY_EXACT(U)\n#define B(OP, E) static inline T b_##OP(T a, T b) { return E; }\n"
           "CPU_BINARY_EXACT(B)\n"
           "#define R(OP, E) static inline double r_##OP(double a, double b) { return E; }\n"
           "CPU_REDUCE_FLOAT(R)\n");
}

/* One function: tfjit_run (lanes 0) or tfjit_run_lanes. */
static void gen_function(src_buf *b, const fused_prog *fp, int lanes)
{
    gen_ctx g;
    g.fp = fp;
    g.lanes = lanes;
    gen_place(&g);
    put(b,
        "int tfjit_run%s(int64_t n, char *const *p, const void *imm, const row_fn *rows, "
        "stream_fn stream, double *lanes, void *err)\n{\n",
        lanes ? "_lanes" : "");
    put(b, "    (void)rows; (void)stream; (void)lanes; (void)err; (void)imm;\n");
    /* In place, o0 is one of the inputs: no restrict, and o0 is written only by the copy
       at each chunk's end, after every read of the chunk. */
    const char *rq = fp->in_place ? "" : "restrict ";
    for (int o = 0; o < fp->n_out; o++) {
        if (!(lanes && o == fp->red_buf)) {
            put(b, "    T *%so%d = (T *)(void *)p[%d];\n", rq, o, o);
        }
    }
    for (int r = 0; r < fp->n_in; r++) {
        put(b, "    const T *%si%d = (const T *)(const void *)p[%d];\n", rq, r, fp->n_out + r);
    }
    for (int j = 0; j < TF_FUSED_MAX_IMMEDIATES; j++) {
        for (int k = 0; k < fp->n_steps; k++) {
            const fused_step *st = &fp->steps[k];
            int uses = 0;
            for (int s = 0; s < st->nsrc; s++) {
                uses |= fp->loc[st->src[s]] == FUSED_LOC_IMM + j;
            }
            if (uses) {
                put(b, "    T k%d; memcpy(&k%d, (const char *)imm + %d, sizeof k%d);\n", j, j,
                    8 * j, j);
                break;
            }
        }
    }
    for (int r = 0; r < FUSED_REGS; r++) {
        if (g.arr[r]) {
            put(b, "    _Alignas(64) T a%d[%d];\n", r, JIT_CHUNK);
        }
    }
    if (lanes) {
        put(b, "    double acc[8];\n    for (int j = 0; j < 8; j++) acc[j] = lanes[j];\n");
    }
    const char *red = lanes ? reduce_name[fp->red_op] : NULL;
    put(b, "    for (int64_t c = 0; c < n; c += %d) {\n", JIT_CHUNK);
    put(b, "        const int64_t len = n - c < %d ? n - c : %d;\n", JIT_CHUNK, JIT_CHUNK);
    for (int k = 0; k < fp->n_steps;) {
        const fused_step *st = &fp->steps[k];
        if (inline_name(st) == NULL) { /* a row call on the chunk */
            put(b, "        {\n            char *q[3] = {");
            put_ptr(b, &g, st->dst);
            for (int s = 0; s < st->nsrc; s++) {
                put(b, ", ");
                put_ptr(b, &g, st->src[s]);
            }
            put(b, "};\n            const int64_t qs[3] = {1, %d, %d};\n",
                stride_of(&g, st->src[0]), st->nsrc == 2 ? stride_of(&g, st->src[1]) : 0);
            put(b, "            if (rows[%d](NULL, len, q, qs, err) != 0) return 1;\n        }\n",
                k);
            if (lanes && st->dst == fp->red_reg) {
                put(b,
                    "        for (int64_t i = 0; i < len; i += 8)\n"
                    "            for (int j = 0; j < 8; j++) {\n"
                    "                const int64_t e = i + j;\n"
                    "                acc[j] = r_%s(acc[j], (double)",
                    red);
                put_read(b, &g, st->dst, -1);
                put(b, ");\n            }\n");
            }
            k++;
            continue;
        }
        const int seg = g.seg[st->dst];
        int end = k, folds = 0;
        while (end < fp->n_steps && inline_name(&fp->steps[end]) != NULL &&
               g.seg[fp->steps[end].dst] == seg) {
            folds |= lanes && fp->steps[end].dst == fp->red_reg;
            end++;
        }
        if (folds) {
            put(b, "        for (int64_t i = 0; i < len; i += 8)\n"
                   "            for (int j = 0; j < 8; j++) {\n"
                   "                const int64_t e = i + j;\n");
        } else {
            put(b, "        for (int64_t e = 0; e < len; e++) {\n");
        }
        for (; k < end; k++) {
            st = &fp->steps[k];
            const int r = st->dst;
            put(b, "                const T v%d = %s_%s(", r, st->nsrc == 2 ? "b" : "u",
                inline_name(st));
            put_read(b, &g, st->src[0], seg);
            if (st->nsrc == 2) {
                put(b, ", ");
                put_read(b, &g, st->src[1], seg);
            }
            put(b, ");\n");
            if (g.out[r] >= 0) {
                put(b, "                o%d[c + e] = v%d;\n", g.out[r], r);
            }
            if (g.arr[r]) {
                put(b, "                a%d[e] = v%d;\n", r, r);
            }
            if (lanes && r == fp->red_reg) {
                put(b, "                acc[j] = r_%s(acc[j], (double)v%d);\n", red, r);
            }
        }
        put(b, "            }\n");
    }
    if (fp->in_place) {
        put(b, "        memcpy(o0 + c, a%d, (size_t)len * sizeof(T));\n",
            fp->steps[fp->n_steps - 1].dst);
    }
    for (int o = 0; o < fp->n_streamed; o++) {
        put(b,
            "        stream((char *)(void *)p[%d] + c * (int64_t)sizeof(T), (const char *)a%d, "
            "(size_t)len * sizeof(T));\n",
            o, fp->streamed_reg[o]);
    }
    put(b, "    }\n");
    if (lanes) {
        put(b, "    for (int j = 0; j < 8; j++) lanes[j] = acc[j];\n");
    }
    put(b, "    return 0;\n}\n");
}

static const char *const *isa_flags(void);

/* The compiler's fixed arguments (before the files and the instruction-set flags). */
static const char *const cc_args[] = {"-std=c11", "-O3",     "-ffp-contract=off",
                                      "-fPIC",    "-shared", "-w"};

/* The whole source of fp's program: a first line naming the calling convention and
   the compiler's command (so that they are part of what a stored program is matched
   against), cpu_ops.h, the functions. */
static int gen_source(const cpu_jit *jit, const fused_prog *fp, src_buf *b)
{
    put(b, "/* tenferro cpu jit, calling convention %d: %s", JIT_CALL_VERSION, jit->cc);
    for (size_t i = 0; i < sizeof cc_args / sizeof cc_args[0]; i++) {
        put(b, " %s", cc_args[i]);
    }
    for (const char *const *f = isa_flags(); *f != NULL; f++) {
        put(b, " %s", *f);
    }
    put(b, " */\n");
    gen_prelude(b, fp);
    gen_function(b, fp, 0);
    if (fp->red_reg >= 0) {
        gen_function(b, fp, 1);
    }
    return b->overflow ? -1 : 0;
}

/* The file the compiler gets: the source, then the source again as the string
   tfjit_source, by which a stored program is recognised (cpu_jit_store.c). */
static char *with_own_text(const src_buf *b, size_t *len)
{
    static const char head[] = "\nconst char tfjit_source[] =\n\"";
    size_t cap = 6 * b->len + sizeof head + 8, n = 0; /* an escape: 5 bytes at most */
    char *t = malloc(cap);
    if (t == NULL) {
        return NULL;
    }
    memcpy(t, b->p, b->len);
    n = b->len;
    memcpy(t + n, head, sizeof head - 1);
    n += sizeof head - 1;
    for (size_t i = 0; i < b->len; i++) {
        const unsigned char c = (unsigned char)b->p[i];
        if (c == '\n') {
            memcpy(t + n, "\\n\"\n\"", 5); /* \n" then a new line and " */
            n += 5;
        } else if (c == '\\' || c == '"' || c == '?') { /* '?': no trigraphs under -std=c11 */
            t[n++] = '\\';
            t[n++] = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            n += (size_t)snprintf(t + n, 5, "\\%03o", c);
        } else {
            t[n++] = (char)c;
        }
    }
    memcpy(t + n, "\";\n", 3);
    n += 3;
    *len = n;
    return t;
}

/* The name a program is stored under: the FNV-1a hash of its source (the file is
   recognised by the whole source, the name only finds it). */
static void store_name(const src_buf *b, char name[32])
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < b->len; i++) {
        h = (h ^ (unsigned char)b->p[i]) * 1099511628211u;
    }
    snprintf(name, 32, "%016llx.so", (unsigned long long)h);
}

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

/* The instruction-set flags for the compiled programs: what this process
   sees (see the file's comment), NULL-terminated. */
static const char *const *isa_flags(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    static const char *const avx512[] = {"-mavx2",     "-mfma",      "-mavx512f", "-mavx512dq",
                                         "-mavx512bw", "-mavx512vl", NULL};
    static const char *const avx2[] = {"-mavx2", "-mfma", NULL};
    static const char *const base[] = {NULL};
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        return base;
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
        return avx512;
    }
    return avx2;
#else
    static const char *const none[] = {NULL};
    return none;
#endif
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
    for (size_t i = 0; i < sizeof cc_args / sizeof cc_args[0]; i++) {
        argv[argc++] = (char *)cc_args[i];
    }
    argv[argc++] = "-o";
    argv[argc++] = obj;
    argv[argc++] = src;
    argv[argc++] = "-lm";
    for (const char *const *f = isa_flags(); *f != NULL; f++) {
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

/* fp's whole source into *b (allocated; free b->p). */
static int make_source(const cpu_jit *jit, const fused_prog *fp, src_buf *b, cpu_err *err)
{
    *b = (src_buf){malloc(JIT_SOURCE_BYTES), 0, JIT_SOURCE_BYTES, 0};
    if (b->p == NULL) {
        return tf__cpu_fail(err, TF_ERR_OUT_OF_MEMORY, "cpu: jit: no memory for the source");
    }
    b->p[0] = '\0';
    if (gen_source(jit, fp, b) != 0) {
        free(b->p);
        b->p = NULL;
        return tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: jit: the program's source is too long");
    }
    return 0;
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

/* fp's program from the store into *e: 1 when it is there (and loads), else 0. */
static int jit_probe(const cpu_jit *jit, const fused_prog *fp, jit_entry *e)
{
    src_buf b;
    cpu_err ignored;
    if (make_source(jit, fp, &b, &ignored) != 0) {
        return 0;
    }
    char name[32];
    store_name(&b, name);
    void *h = tf__cpu_jit_store_load(&jit->store, name, b.p);
    free(b.p);
    return h != NULL && take_functions(fp, h, e) == 0;
}

/*
 * Generates, compiles and loads fp's program into *e (fn, fn_lanes, handle). With
 * a store (stored), it is built in a private folder inside the store's and the
 * object renamed into place before it is loaded from there; else in one under
 * $TMPDIR, removed afterwards.
 */
static int jit_compile(const cpu_jit *jit, const fused_prog *fp, int stored, jit_entry *e,
                       cpu_err *err)
{
    src_buf b;
    if (make_source(jit, fp, &b, err) != 0) {
        return 1;
    }
    char name[32];
    store_name(&b, name);
    size_t len = 0;
    char *text = with_own_text(&b, &len);
    if (text == NULL) {
        free(b.p);
        return tf__cpu_fail(err, TF_ERR_OUT_OF_MEMORY, "cpu: jit: no memory for the source");
    }
    const char *tmp = getenv("TMPDIR");
    const char *base = stored ? jit->store.dir : tmp != NULL && tmp[0] ? tmp : "/tmp";
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", base, stored ? "tmp-XXXXXX" : "tenferro-jit-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        free(text);
        free(b.p);
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
            h = tf__cpu_jit_store_load(&jit->store, name, b.p);
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
    free(b.p);
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

int tf__cpu_jit_lookup(const cpu_engine *eng, fused_prog *fp, int64_t numel, cpu_err *err)
{
    cpu_jit *jit = eng->jit_cache;
    fp->jit = fp->jit_lanes = NULL;
    if (jit == NULL || !jit_covers(fp) ||
        (jit->mode == CPU_JIT_AUTO && numel < CPU_JIT_MIN_ELEMS)) {
        return 0;
    }
    int32_t key[JIT_KEY_WORDS];
    const int n = jit_key(fp, key);
    const uint64_t h = key_hash(key, n);
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
    jit_entry made = *e; /* e is not NULL: it was counting */
    if (probe) {
        const int found = jit_probe(jit, fp, &made);
        pthread_mutex_lock(&jit->mu);
        if (found) {
            e->handle = made.handle;
            e->fn = made.fn;
            e->fn_lanes = made.fn_lanes;
        }
        compile = !found && jit->mode == CPU_JIT_ALWAYS;
        e->state = found ? JIT_READY : compile ? JIT_COMPILING : JIT_COUNTING;
        pthread_mutex_unlock(&jit->mu);
        if (found) {
            fp->jit = made.fn;
            fp->jit_lanes = made.fn_lanes;
            return 0;
        }
    }
    if (!compile) {
        return failed;
    }
    cpu_err why;
    const int rc = jit_compile(jit, fp, stored, &made, &why);
    pthread_mutex_lock(&jit->mu);
    e->handle = made.handle;
    e->fn = made.fn;
    e->fn_lanes = made.fn_lanes;
    e->state = rc == 0 ? JIT_READY : JIT_FAILED;
    if (rc != 0) {
        e->why = why;
    }
    pthread_mutex_unlock(&jit->mu);
    if (rc == 0) {
        fp->jit = made.fn;
        fp->jit_lanes = made.fn_lanes;
        return 0;
    }
    if (jit->mode == CPU_JIT_ALWAYS) {
        *err = why;
        return 1;
    }
    return 0;
}
