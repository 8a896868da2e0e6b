/*
 * cpu_jit_gen.c - the hot-program compiler's code generator (cpu_jit_gen.h): a
 * prepared FUSED program (cpu_fused.h) written as the C of one shared object,
 * and the key by which the compiler's table knows the program. cpu_jit.c says
 * what is compiled, why the values are the interpreter's bit for bit, and
 * when; this file is how the code looks.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_jit_gen.h"
#include "cpu_ops.h"
#include "cpu_ops_text.h" /* tf__cpu_ops_text: cpu_ops.h as a string (built by CMake) */

#define JIT_CHUNK 256          /* elements per chunk of the generated loop */
#define JIT_SOURCE_BYTES 65536 /* a generated file, at most */

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

/* ---- vector maths compiled inline ---------------------------------------------- */

/* The rows of cpu_vmath.c and the libm function each computes. */
#define VMATH_ENTRY(f) {tf__cpu_##f##_f32, #f "f"}, {tf__cpu_##f##_f64, #f},
static const struct {
    cpu_row_fn row;
    const char *fn;
} vmath_rows[] = {CPU_VMATH_ROWS(VMATH_ENTRY)};
#undef VMATH_ENTRY

/* The instruction set the generated code is compiled for, as the letter of the x86
   vector function ABI (which libmvec variants its loops call): 'e' with AVX-512 (F, DQ,
   BW, VL), 'd' with AVX2 and FMA, 'b' for the baseline (or not x86-64: no flags). */
static int jit_isa(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        return 'b';
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) {
        return 'e';
    }
    return 'd';
#else
    return 'b';
#endif
}

/*
 * Whether steps whose row is one of cpu_vmath.c's are compiled inline: the rows call
 * libmvec (tf__cpu_vmath_isa) and the generated code, compiled for this process's
 * instruction set, would call the very same variants (the same ABI letter). Which
 * variant a loop calls is GCC's choice, so the generated code takes the inline form
 * only when the GCC compiling it is of the version that compiled the rows (its
 * prelude checks) and calls the rows otherwise.
 */
static int vmath_inline(void)
{
    const int isa = tf__cpu_vmath_isa();
    return isa != 0 && tf__cpu_vmath_gcc != 0 && isa == jit_isa();
}

/* The libm function step st computes through a cpu_vmath.c row, or NULL. */
static const char *vmath_fn(const fused_step *st)
{
    for (size_t i = 0; st->nsrc == 1 && i < sizeof vmath_rows / sizeof vmath_rows[0]; i++) {
        if (vmath_rows[i].row == st->fn) {
            return vmath_rows[i].fn;
        }
    }
    return NULL;
}

const char *const *tf__cpu_jit_vmath_flags(void)
{
    static const char *const on[] = {"-fopenmp-simd", "-fno-math-errno", NULL};
    static const char *const off[] = {NULL};
    return vmath_inline() ? on : off;
}

int tf__cpu_jit_covers(const fused_prog *fp)
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

int tf__cpu_jit_key(const fused_prog *fp, int32_t *key)
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

uint64_t tf__cpu_jit_key_hash(const int32_t *key, int n)
{
    uint64_t h = 1469598103934665603u; /* FNV-1a over the words */
    for (int i = 0; i < n; i++) {
        h = (h ^ (uint32_t)key[i]) * 1099511628211u;
    }
    return h;
}

/* ---- code generation ----------------------------------------------------------- */

static void put(cpu_jit_src *b, const char *fmt, ...) CPU_PRINTF(2, 3);
static void put(cpu_jit_src *b, const char *fmt, ...)
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
static void put_read(cpu_jit_src *b, const gen_ctx *g, int r, int seg)
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
static void put_ptr(cpu_jit_src *b, const gen_ctx *g, int r)
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

/*
 * The block form's vector maths (gen_block): per libmvec function f of the dtype,
 * tfjit_vm_f, declared "declare simd" so that a vectorised loop calls its vector
 * variant, defined here by the name of the x86 vector ABI (this process's letter, the
 * rows' lanes) as libmvec's own variant of f, the one the rows call; and its scalar
 * form, which a loop the compiler leaves scalar calls, as lane 0 of that same variant on
 * the value broadcast, since a variant computes each lane from its own input alone. The
 * scalar form is defined under another C name with the scalar symbol as its assembler
 * name, so that the compiler makes no vector clones of it.
 */
static void gen_vm_functions(cpu_jit_src *b, int f32)
{
    const int isa = tf__cpu_vmath_isa();
    const int bits = isa == 'e' ? 512 : isa == 'd' ? 256 : 128;
    const int lanes = bits / (f32 ? 32 : 64);
    const char *vt = bits == 512 ? (f32 ? "__m512" : "__m512d")
                     : bits == 256 ? (f32 ? "__m256" : "__m256d")
                                   : (f32 ? "__m128" : "__m128d");
    const char *pre = bits == 512 ? "_mm512" : bits == 256 ? "_mm256" : "_mm";
    put(b, "#include <immintrin.h>\n");
    for (size_t i = f32 ? 0 : 1; i < sizeof vmath_rows / sizeof vmath_rows[0]; i += 2) {
        const char *f = vmath_rows[i].fn;
        put(b,
            "extern %s _ZGV%cN%dv_%s(%s);\n"
            "#pragma omp declare simd notinbranch\nextern T tfjit_vm_%s(T);\n"
            "%s _ZGV%cN%dv_tfjit_vm_%s(%s x) { return _ZGV%cN%dv_%s(x); }\n"
            "T tfjit_vm_%s_scalar(T x) __asm__(\"tfjit_vm_%s\");\n"
            "T tfjit_vm_%s_scalar(T x) { return %s_cvt%s(_ZGV%cN%dv_%s(%s_set1_%s(x))); }\n",
            vt, isa, lanes, f, vt, f, vt, isa, lanes, f, vt, isa, lanes, f, f, f, f, pre,
            f32 ? "ss_f32" : "sd_f64", isa, lanes, f, pre, f32 ? "ps" : "pd");
    }
}

static void gen_prelude(cpu_jit_src *b, const fused_prog *fp)
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
    if (!vmath_inline()) {
        return;
    }
    /* the libmvec functions, as cpu_vmath.c declares them, for the GCC that built it */
    put(b, "#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == %d\n", tf__cpu_vmath_gcc);
    put(b, "#define TFJIT_VMATH 1\n");
    for (size_t i = f32 ? 0 : 1; i < sizeof vmath_rows / sizeof vmath_rows[0]; i += 2) {
        put(b, "#pragma omp declare simd notinbranch\nextern T %s(T);\n", vmath_rows[i].fn);
    }
    gen_vm_functions(b, f32);
    put(b, "#else\n#define TFJIT_VMATH 0\n#endif\n");
}

/* Step k, whose row is a cpu_vmath.c row computing fn, on the chunk, inline: each
   element through the same vector function as in the row (cpu_vmath.c), in whole
   blocks of CPU_VMATH_BLOCK and a last block padded with zeros. */
static void gen_vmath(cpu_jit_src *b, const gen_ctx *g, const fused_step *st, const char *fn)
{
    put(b, "        {\n            T *restrict vd = (T *)(void *)(");
    put_ptr(b, g, st->dst);
    put(b, ");\n            const T *restrict vs = (const T *)(const void *)(");
    put_ptr(b, g, st->src[0]);
    put(b, ");\n");
    put(b,
        "            int64_t v = 0;\n"
        "            for (; v + %d <= len; v += %d) {\n"
        "                _Pragma(\"omp simd\")\n"
        "                for (int j = 0; j < %d; j++) vd[v + j] = %s(vs[v + j]);\n"
        "            }\n"
        "            if (v < len) {\n"
        "                T in[%d] = {0}, res[%d];\n"
        "                for (int64_t j = 0; j < len - v; j++) in[j] = vs[v + j];\n"
        "                _Pragma(\"omp simd\")\n"
        "                for (int j = 0; j < %d; j++) res[j] = %s(in[j]);\n"
        "                for (int64_t j = 0; j < len - v; j++) vd[v + j] = res[j];\n"
        "            }\n"
        "        }\n",
        CPU_VMATH_BLOCK, CPU_VMATH_BLOCK, CPU_VMATH_BLOCK, fn, CPU_VMATH_BLOCK, CPU_VMATH_BLOCK,
        CPU_VMATH_BLOCK, fn);
}

/* One function: tfjit_run (lanes 0) or tfjit_run_lanes. */
/* The immediates the program reads, as locals k<j> of the function. */
static void put_immediates(cpu_jit_src *b, const fused_prog *fp)
{
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
}

/* ---- the block form: programs with vector maths, all in one loop ---------------- */

/* Whether fp is compiled in the block form (gen_block): at least one step of a
   cpu_vmath.c row inlined (vmath_inline), every other step exact, nothing in place or
   streamed. */
static int block_form(const fused_prog *fp)
{
    if (!vmath_inline() || fp->in_place || fp->n_streamed > 0) {
        return 0;
    }
    int vmath = 0;
    for (int k = 0; k < fp->n_steps; k++) {
        const fused_step *st = &fp->steps[k];
        if (inline_name(st) != NULL) {
            continue;
        }
        if (vmath_fn(st) == NULL || fp->loc[st->src[0]] >= FUSED_LOC_IMM) {
            return 0;
        }
        vmath = 1;
    }
    return vmath;
}

/* Register r as the block form's loop body reads it: an input at element e of the
   chunk (padded: from its padded copy), an immediate, or a step's value. */
static void put_block_read(cpu_jit_src *b, const fused_prog *fp, int r, int padded)
{
    const int where = fp->loc[r];
    if (r < fp->n_in) {
        put(b, padded ? "pi%d[j]" : "i%d[c + v + j]", r);
    } else if (where >= FUSED_LOC_IMM) {
        put(b, "k%d", where - FUSED_LOC_IMM);
    } else {
        put(b, "v%d", r);
    }
}

/* The body over one block: every step in order (a vector-maths step through its
   tfjit_vm_ function, the prelude's), each output stored, the reduced register (lanes)
   kept in rv. */
static void put_block_body(cpu_jit_src *b, const fused_prog *fp, int lanes, int padded)
{
    put(b, "            _Pragma(\"omp simd\")\n            for (int j = 0; j < %d; j++) {\n",
        CPU_VMATH_BLOCK);
    for (int k = 0; k < fp->n_steps; k++) {
        const fused_step *st = &fp->steps[k];
        const char *name = inline_name(st);
        if (name != NULL) {
            put(b, "                const T v%d = %s_%s(", st->dst, st->nsrc == 2 ? "b" : "u",
                name);
        } else {
            put(b, "                const T v%d = tfjit_vm_%s(", st->dst, vmath_fn(st));
        }
        put_block_read(b, fp, st->src[0], padded);
        if (st->nsrc == 2) {
            put(b, ", ");
            put_block_read(b, fp, st->src[1], padded);
        }
        put(b, ");\n");
        const int where = fp->loc[st->dst];
        if (lanes && st->dst == fp->red_reg) {
            put(b, "                rv[j] = v%d;\n", st->dst);
        }
        if (where >= 0 && where < fp->n_out && !(lanes && where == fp->red_buf)) {
            put(b, padded ? "                po%d[j] = v%d;\n"
                          : "                o%d[c + v + j] = v%d;\n",
                where, st->dst);
        }
    }
    put(b, "            }\n");
}

/* The lanes' folds of m (a multiple of 8) values of rv, in the lanes' order. */
static void put_block_fold(cpu_jit_src *b, const fused_prog *fp, const char *m)
{
    put(b,
        "            for (int h = 0; h < %s; h += 8)\n"
        "                for (int j = 0; j < 8; j++) acc[j] = r_%s(acc[j], (double)rv[h + j]);\n",
        m, reduce_name[fp->red_op]);
}

/*
 * tfjit_run (lanes 0) or tfjit_run_lanes of a block-form program: per chunk, whole
 * blocks of CPU_VMATH_BLOCK elements each in one simd loop computing every step, then
 * a last block on copies of the inputs padded with zeros, its outputs copied back; the
 * reduced register is kept per block and folded into the lanes in their order, as the
 * row form does. Values stay in registers from step to step. A vector-maths step calls
 * the prelude's tfjit_vm_ function, whose vector variant is libmvec's that the rows call
 * and whose scalar form (a loop the compiler leaves scalar) is lane 0 of that variant:
 * the same value either way (each lane of a libmvec variant is computed from its own
 * input alone).
 */
static void gen_block(cpu_jit_src *b, const fused_prog *fp, int lanes)
{
    const int B = CPU_VMATH_BLOCK;
    put(b,
        "int tfjit_run%s(int64_t n, char *const *p, const void *imm, const row_fn *rows, "
        "stream_fn stream, double *lanes, void *err)\n{\n",
        lanes ? "_lanes" : "");
    put(b, "    (void)rows; (void)stream; (void)lanes; (void)err; (void)imm;\n");
    for (int o = 0; o < fp->n_out; o++) {
        if (!(lanes && o == fp->red_buf)) {
            put(b, "    T *restrict o%d = (T *)(void *)p[%d];\n", o, o);
        }
    }
    for (int r = 0; r < fp->n_in; r++) {
        put(b, "    const T *restrict i%d = (const T *)(const void *)p[%d];\n", r, fp->n_out + r);
    }
    put_immediates(b, fp);
    if (lanes) {
        put(b, "    double acc[8];\n    for (int j = 0; j < 8; j++) acc[j] = lanes[j];\n");
    }
    put(b, "    for (int64_t c = 0; c < n; c += %d) {\n", JIT_CHUNK);
    put(b, "        const int64_t len = n - c < %d ? n - c : %d;\n", JIT_CHUNK, JIT_CHUNK);
    put(b, "        int64_t v = 0;\n        for (; v + %d <= len; v += %d) {\n", B, B);
    if (lanes) {
        put(b, "            T rv[%d];\n", B);
    }
    put_block_body(b, fp, lanes, 0);
    if (lanes) {
        char m[8];
        snprintf(m, sizeof m, "%d", B);
        put_block_fold(b, fp, m);
    }
    put(b, "        }\n        if (v < len) {\n            const int64_t m = len - v;\n");
    if (lanes) {
        put(b, "            T rv[%d];\n", B);
    }
    for (int r = 0; r < fp->n_in; r++) {
        put(b,
            "            T pi%d[%d] = {0};\n"
            "            for (int64_t j = 0; j < m; j++) pi%d[j] = i%d[c + v + j];\n",
            r, B, r, r);
    }
    for (int o = 0; o < fp->n_out; o++) {
        if (!(lanes && o == fp->red_buf)) {
            put(b, "            T po%d[%d];\n", o, B);
        }
    }
    put_block_body(b, fp, lanes, 1);
    for (int o = 0; o < fp->n_out; o++) {
        if (!(lanes && o == fp->red_buf)) {
            put(b, "            for (int64_t j = 0; j < m; j++) o%d[c + v + j] = po%d[j];\n", o,
                o);
        }
    }
    if (lanes) { /* the lanes' calls cover whole groups of 8 (fused_red_unit) */
        put_block_fold(b, fp, "m");
    }
    put(b, "        }\n    }\n");
    if (lanes) {
        put(b, "    for (int j = 0; j < 8; j++) lanes[j] = acc[j];\n");
    }
    put(b, "    return 0;\n}\n");
}

static void gen_function(cpu_jit_src *b, const fused_prog *fp, int lanes)
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
    put_immediates(b, fp);
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
            const char *fn = vmath_inline() && stride_of(&g, st->src[0]) != 0 ? vmath_fn(st)
                                                                               : NULL;
            if (fn != NULL) {
                put(b, "#if TFJIT_VMATH\n");
                gen_vmath(b, &g, st, fn);
                put(b, "#else\n");
            }
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
            if (fn != NULL) {
                put(b, "#endif\n");
            }
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

const char *const tf__cpu_jit_cc_args[] = {
    "-std=c11", "-O3", "-ffp-contract=off", "-fPIC", "-shared", "-w", NULL};

/* The whole source of fp's program: a first line naming the calling convention and
   the compiler's command (so that they are part of what a stored program is matched
   against), cpu_ops.h, the functions. */
static int gen_source(const char *cc, const fused_prog *fp, cpu_jit_src *b)
{
    put(b, "/* tenferro cpu jit, calling convention %d: %s", JIT_CALL_VERSION, cc);
    for (const char *const *a = tf__cpu_jit_cc_args; *a != NULL; a++) {
        put(b, " %s", *a);
    }
    for (const char *const *f = tf__cpu_jit_isa_flags(); *f != NULL; f++) {
        put(b, " %s", *f);
    }
    for (const char *const *f = tf__cpu_jit_vmath_flags(); *f != NULL; f++) {
        put(b, " %s", *f);
    }
    put(b, " */\n");
    gen_prelude(b, fp);
    /* the block form where its compiler calls the rows' libmvec variants, the row form
       under any other (its prelude's TFJIT_VMATH) */
    const int block = block_form(fp);
    if (block) {
        put(b, "#if TFJIT_VMATH\n");
        gen_block(b, fp, 0);
        if (fp->red_reg >= 0) {
            gen_block(b, fp, 1);
        }
        put(b, "#else\n");
    }
    gen_function(b, fp, 0);
    if (fp->red_reg >= 0) {
        gen_function(b, fp, 1);
    }
    if (block) {
        put(b, "#endif\n");
    }
    return b->overflow ? -1 : 0;
}

char *tf__cpu_jit_with_own_text(const cpu_jit_src *b, size_t *len)
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

void tf__cpu_jit_store_name(const cpu_jit_src *b, char name[32])
{
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < b->len; i++) {
        h = (h ^ (unsigned char)b->p[i]) * 1099511628211u;
    }
    snprintf(name, 32, "%016llx.so", (unsigned long long)h);
}

const char *const *tf__cpu_jit_isa_flags(void)
{
    static const char *const avx512[] = {"-mavx2",     "-mfma",      "-mavx512f", "-mavx512dq",
                                         "-mavx512bw", "-mavx512vl", NULL};
    static const char *const avx2[] = {"-mavx2", "-mfma", NULL};
    static const char *const base[] = {NULL};
    const int isa = jit_isa();
    return isa == 'e' ? avx512 : isa == 'd' ? avx2 : base;
}

int tf__cpu_jit_source(const char *cc, const fused_prog *fp, cpu_jit_src *b, cpu_err *err)
{
    *b = (cpu_jit_src){malloc(JIT_SOURCE_BYTES), 0, JIT_SOURCE_BYTES, 0};
    if (b->p == NULL) {
        return tf__cpu_fail(err, TF_ERR_OUT_OF_MEMORY, "cpu: jit: no memory for the source");
    }
    b->p[0] = '\0';
    if (gen_source(cc, fp, b) != 0) {
        free(b->p);
        b->p = NULL;
        return tf__cpu_fail(err, TF_ERR_BACKEND, "cpu: jit: the program's source is too long");
    }
    return 0;
}
