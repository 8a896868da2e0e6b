/*
 * test_vulkan_checks.c - the Vulkan engine's own checks of a call, and
 * TF_EXEC_VALIDATED, through the plugin's entry point with a host table of
 * this file (the core refuses malformed calls before an engine sees them, and
 * sets TF_EXEC_VALIDATED on every call it makes).
 *
 * - A call without the flag (a host that does not validate, or a 1.0 host
 *   whose tf_exec has no flags) is checked by the engine: FUSED programs and
 *   their ABI 1.3 outputs, operand counts, params, dtypes, operands missing or
 *   not in the engine's memory. Each refusal has the core's error kind, is
 *   reported with a message, and records nothing: the outputs keep their
 *   contents. The same call made valid computes.
 * - A call with the flag is not checked again: a call only those checks
 *   would refuse (an extra output, which no dispatch reads) runs, and the
 *   extra output is left alone. The engine's own limits (32-bit addressing)
 *   still refuse a validated call.
 *
 * The validation layer is on, as in every Vulkan test; it must stay silent.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/engine_abi.h>

#include "vk_fixture.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the plugin driven through its entry point, as a host of its own -------------------- */

static char last_error[512];
static tf_status last_status;
static int validation_lines;

static void *h_alloc(void *ctx, size_t size, size_t align)
{
    (void)ctx;
    if (align < sizeof(void *))
        align = sizeof(void *) * 2;
    void *p = NULL;
    return posix_memalign(&p, align, size ? size : 1) == 0 ? p : NULL;
}

static void h_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static void h_report(void *ctx, tf_status status, const char *message)
{
    (void)ctx;
    last_status = status;
    snprintf(last_error, sizeof last_error, "%s", message);
}

static void h_log(void *ctx, tf_log_level level, const char *message)
{
    (void)ctx;
    (void)level;
    if (strstr(message, "vulkan: validation") != NULL) {
        validation_lines++;
        print_error("%s\n", message);
    }
}

typedef struct direct {
    void *so;
    const tf_engine_plugin *pl;
    void *ctx;
    tf_engine_state *e;
} direct;

static void direct_open(direct *d)
{
    d->so = dlopen(TF_VULKAN_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (d->so == NULL)
        fail_msg("dlopen(%s): %s", TF_VULKAN_PLUGIN_PATH, dlerror());
    static tf_host_api host = {
        sizeof host, TF_ENGINE_ABI_MAJOR, TF_ENGINE_ABI_MINOR, 0, NULL, h_alloc, h_free, h_report,
        h_log};
    tf_engine_entry_fn entry;
    *(void **)&entry = dlsym(d->so, TF_ENGINE_ENTRY_SYMBOL);
    assert_non_null(entry);
    d->pl = entry(&host);
    assert_non_null(d->pl);
    assert_int_equal(d->pl->init(&host, &d->ctx), TF_OK);
    assert_int_equal(d->pl->create(d->ctx, NULL, &d->e), TF_OK);
}

static void direct_close(direct *d)
{
    d->pl->destroy(d->e);
    if (d->pl->shutdown)
        d->pl->shutdown(d->ctx);
    /* The plugin stays loaded: the loader owns other references to it (the fixture's engine). */
}

/* An f32 operand of `n` elements at the start of `b`. */
static tf_operand operand(tf_engine_buffer *b, uint32_t rank, const int64_t *shape,
                          const int64_t *strides)
{
    return (tf_operand){sizeof(tf_operand), TF_F32, rank, 0, shape, strides, 0, b, NULL};
}

/* Executes *x (its struct_size and flags as given), the error slot cleared first. */
static tf_status direct_call(direct *d, const tf_exec *x)
{
    last_status = TF_OK;
    last_error[0] = '\0';
    return d->pl->execute(d->e, x);
}

/* A call of prim with `flags` (0: a host that does not validate). */
static tf_status direct_prim(direct *d, uint32_t prim, const void *params, uint32_t n_in,
                             const tf_operand *const *in, uint32_t n_out,
                             const tf_operand *const *out, uint32_t flags)
{
    tf_exec x = {.struct_size = sizeof x,
                 .prim = prim,
                 .params = params,
                 .n_inputs = n_in,
                 .n_outputs = n_out,
                 .inputs = in,
                 .outputs = out,
                 .flags = flags};
    return direct_call(d, &x);
}

static tf_status direct_exec(direct *d, const tf_fused_params *fp, uint32_t n_in,
                             const tf_operand *const *in, uint32_t n_out,
                             const tf_operand *const *out)
{
    return direct_prim(d, TF_PRIM_FUSED, fp, n_in, in, n_out, out, 0);
}

/*
 * Without TF_EXEC_VALIDATED the engine refuses bad programs itself, with the core's error
 * kinds, before recording anything: the output keeps its contents. A valid call computes.
 */
static void test_fused_engine_checks(void **state)
{
    (void)state;
    direct d;
    direct_open(&d);
    enum {
        N = 6
    };
    int64_t shape[1] = {N}, strides[1] = {1}, bcast[1] = {0}, other[1] = {N - 1};
    tf_engine_buffer *ba, *bb, *bo;
    void *hp;
    assert_int_equal(d.pl->buffer_alloc(d.e, N * 4, &ba, &hp), TF_OK);
    assert_int_equal(d.pl->buffer_alloc(d.e, N * 4, &bb, &hp), TF_OK);
    assert_int_equal(d.pl->buffer_alloc(d.e, N * 4, &bo, &hp), TF_OK);
    float a[N] = {1, 2, 3, 4, 5, 6}, b[N] = {0.5f, 0, 0, 0, 0, 0}, sentinel[N];
    for (int i = 0; i < N; i++)
        sentinel[i] = -77.0f;
    assert_int_equal(d.pl->upload(d.e, ba, 0, a, sizeof a), TF_OK);
    assert_int_equal(d.pl->upload(d.e, bb, 0, b, sizeof b), TF_OK);
    assert_int_equal(d.pl->upload(d.e, bo, 0, sentinel, sizeof sentinel), TF_OK);
    tf_operand oa = operand(ba, 1, shape, strides), ob = operand(bb, 1, shape, bcast);
    tf_operand oo = operand(bo, 1, shape, strides);
    const tf_operand *in2[2] = {&oa, &ob}, *out1[1] = {&oo};
    /* r2 = a * b (b broadcast: 0.5), r3 = r2 + a */
    tf_fused_step good[2] = {{TF_FUSED_BINARY, TF_BINARY_MUL, 0, 1},
                             {TF_FUSED_BINARY, TF_BINARY_ADD, 2, 0}};
    tf_fused_params fp = {sizeof fp, 2, good, 0, NULL, 0, NULL, 0, 0};

    struct bad {
        const char *what;
        tf_fused_step step; /* replaces step 1 */
        uint32_t n_steps, struct_size, n_in;
        int null_steps, f64_in, short_in;
        tf_status want;
    } bads[] = {
        {"unknown kind", {2, 0, 0, 0}, 2, sizeof fp, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"unknown unary op",
         {0, TF_UNARY_COUNT_, 0, 0},
         2,
         sizeof fp,
         2,
         0,
         0,
         0,
         TF_ERR_VALIDATION},
        {"unknown binary op",
         {1, TF_BINARY_COUNT_, 0, 1},
         2,
         sizeof fp,
         2,
         0,
         0,
         0,
         TF_ERR_VALIDATION},
        {"logical not",
         {0, TF_UNARY_LOGICAL_NOT, 0, 0},
         2,
         sizeof fp,
         2,
         0,
         0,
         0,
         TF_ERR_DTYPE_MISMATCH},
        {"bitwise and", {1, TF_BINARY_AND, 0, 1}, 2, sizeof fp, 2, 0, 0, 0, TF_ERR_DTYPE_MISMATCH},
        {"a reads itself", {0, TF_UNARY_NEG, 3, 0}, 2, sizeof fp, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"b reads ahead", {1, TF_BINARY_ADD, 0, 3}, 2, sizeof fp, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"unary with b", {0, TF_UNARY_NEG, 2, 1}, 2, sizeof fp, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"no steps", {1, TF_BINARY_ADD, 2, 0}, 0, sizeof fp, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"17 steps", {1, TF_BINARY_ADD, 2, 0}, 17, sizeof fp, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"steps NULL", {1, TF_BINARY_ADD, 2, 0}, 2, sizeof fp, 2, 1, 0, 0, TF_ERR_VALIDATION},
        {"short params", {1, TF_BINARY_ADD, 2, 0}, 2, 8, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"no inputs", {1, TF_BINARY_ADD, 2, 0}, 2, sizeof fp, 0, 0, 0, 0, TF_ERR_VALIDATION},
        {"f64 input", {1, TF_BINARY_ADD, 2, 0}, 2, sizeof fp, 2, 0, 1, 0, TF_ERR_DTYPE_MISMATCH},
        {"shorter input",
         {1, TF_BINARY_ADD, 2, 0},
         2,
         sizeof fp,
         2,
         0,
         0,
         1,
         TF_ERR_SHAPE_MISMATCH},
    };
    for (size_t i = 0; i < COUNT(bads); i++) {
        const struct bad *c = &bads[i];
        tf_fused_step steps[17];
        for (int k = 0; k < 17; k++)
            steps[k] = good[k == 0 ? 0 : 1];
        steps[1] = c->step;
        tf_fused_params bp = {
            c->struct_size, c->n_steps, c->null_steps ? NULL : steps, 0, NULL, 0, NULL, 0, 0};
        tf_operand fa = oa, fb = ob;
        if (c->f64_in)
            fb.dtype = TF_F64;
        if (c->short_in)
            fa.shape = other;
        const tf_operand *in[2] = {&fa, &fb};
        tf_status st = direct_exec(&d, &bp, c->n_in, in, 1, out1);
        if (st != c->want)
            fail_msg("%s: %s (want %s): %s", c->what, tf_status_name(st), tf_status_name(c->want),
                     last_error);
        assert_int_equal(last_status, c->want); /* reported with a message */
        assert_non_null(strstr(last_error, "FUSED"));
    }
    float got[N];
    assert_int_equal(d.pl->download(d.e, bo, 0, got, sizeof got), TF_OK);
    assert_memory_equal(got, sentinel, sizeof got);

    assert_int_equal(direct_exec(&d, &fp, 2, in2, 1, out1), TF_OK);
    assert_int_equal(d.pl->download(d.e, bo, 0, got, sizeof got), TF_OK);
    for (int i = 0; i < N; i++)
        assert_true(got[i] == a[i] * 0.5f + a[i]);
    d.pl->buffer_free(d.e, ba);
    d.pl->buffer_free(d.e, bb);
    d.pl->buffer_free(d.e, bo);
    direct_close(&d);
    assert_int_equal(validation_lines, 0);
}

/*
 * The ABI 1.3 fields, checked by the engine itself: n_outputs and outputs, the output
 * count, the further outputs' dtypes and shapes. Every refusal leaves all three outputs
 * as they were; then a 3-output call computes, and a 1.2-sized params struct (whose
 * writer knew no n_outputs) is one output whatever lies beyond it.
 */
static void test_fused_engine_output_checks(void **state)
{
    (void)state;
    direct d;
    direct_open(&d);
    enum {
        N = 6
    };
    int64_t shape[1] = {N}, strides[1] = {1}, other[1] = {N - 1};
    tf_engine_buffer *ba, *bo[3];
    void *hp;
    float a[N] = {1, 2, 3, 4, 5, 6}, sentinel[N], got[N];
    for (int i = 0; i < N; i++)
        sentinel[i] = -77.0f;
    assert_int_equal(d.pl->buffer_alloc(d.e, sizeof a, &ba, &hp), TF_OK);
    assert_int_equal(d.pl->upload(d.e, ba, 0, a, sizeof a), TF_OK);
    tf_operand oa = operand(ba, 1, shape, strides), oo[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d.pl->buffer_alloc(d.e, sizeof a, &bo[i], &hp), TF_OK);
        assert_int_equal(d.pl->upload(d.e, bo[i], 0, sentinel, sizeof sentinel), TF_OK);
        oo[i] = operand(bo[i], 1, shape, strides);
    }
    const tf_operand *in1[1] = {&oa};
    /* r1 = a * a, r2 = r1 + a, r3 = -r2 */
    tf_fused_step steps[3] = {{TF_FUSED_BINARY, TF_BINARY_MUL, 0, 0},
                              {TF_FUSED_BINARY, TF_BINARY_ADD, 1, 0},
                              {TF_FUSED_UNARY, TF_UNARY_NEG, 2, 0}};
    struct bad {
        const char *what;
        uint32_t n_outputs, outs[3];
        uint32_t x_outputs; /* tf_exec.n_outputs */
        int null_outputs, f64_out1, short_out1;
        tf_status want;
    } bads[] = {
        {"nine outputs", 9, {0, 1, 2}, 9, 0, 0, 0, TF_ERR_VALIDATION},
        {"outputs NULL", 2, {0, 2}, 2, 1, 0, 0, TF_ERR_VALIDATION},
        {"a step twice", 2, {2, 2}, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"decreasing", 3, {1, 0, 2}, 3, 0, 0, 0, TF_ERR_VALIDATION},
        {"last output not the last step", 2, {0, 1}, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"a step past the program", 2, {0, 3}, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"fewer operands than n_outputs", 3, {0, 1, 2}, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"more operands than n_outputs", 2, {0, 2}, 3, 0, 0, 0, TF_ERR_VALIDATION},
        {"n_outputs 0 with two operands", 0, {0, 2}, 2, 0, 0, 0, TF_ERR_VALIDATION},
        {"f64 output 1", 2, {0, 2}, 2, 0, 1, 0, TF_ERR_DTYPE_MISMATCH},
        {"shorter output 1", 2, {0, 2}, 2, 0, 0, 1, TF_ERR_SHAPE_MISMATCH},
    };
    for (size_t i = 0; i < COUNT(bads); i++) {
        const struct bad *c = &bads[i];
        tf_fused_params bp = {
            sizeof bp, 3, steps, c->n_outputs, c->null_outputs ? NULL : c->outs, 0, NULL, 0, 0};
        tf_operand o1 = oo[1];
        if (c->f64_out1)
            o1.dtype = TF_F64;
        if (c->short_out1)
            o1.shape = other;
        const tf_operand *outs[9] = {&oo[0], &o1,    &oo[2], &oo[2], &oo[2],
                                     &oo[2], &oo[2], &oo[2], &oo[2]};
        tf_status st = direct_exec(&d, &bp, 1, in1, c->x_outputs, outs);
        if (st != c->want)
            fail_msg("%s: %s (want %s): %s", c->what, tf_status_name(st), tf_status_name(c->want),
                     last_error);
        assert_int_equal(last_status, c->want);
        assert_non_null(strstr(last_error, "FUSED"));
    }
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d.pl->download(d.e, bo[i], 0, got, sizeof got), TF_OK);
        assert_memory_equal(got, sentinel, sizeof got);
    }

    uint32_t all[3] = {0, 1, 2};
    tf_fused_params fp = {sizeof fp, 3, steps, 3, all, 0, NULL, 0, 0};
    const tf_operand *outs[3] = {&oo[0], &oo[1], &oo[2]};
    assert_int_equal(direct_exec(&d, &fp, 1, in1, 3, outs), TF_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d.pl->download(d.e, bo[i], 0, got, sizeof got), TF_OK);
        for (int k = 0; k < N; k++) {
            float sq = a[k] * a[k], want = i == 0 ? sq : (i == 1 ? sq + a[k] : -(sq + a[k]));
            assert_true(got[k] == want);
        }
    }
    /* A 1.2 writer's struct ends at steps: what follows (3, outputs 0, 0, 0) is not read. */
    uint32_t bogus[3] = {0, 0, 0};
    tf_fused_params old = {offsetof(tf_fused_params, n_outputs), 3, steps, 3, bogus, 0, NULL, 0, 0};
    assert_int_equal(direct_exec(&d, &old, 1, in1, 1, outs), TF_OK);
    assert_int_equal(d.pl->download(d.e, bo[0], 0, got, sizeof got), TF_OK);
    for (int k = 0; k < N; k++)
        assert_true(got[k] == -(a[k] * a[k] + a[k]));

    d.pl->buffer_free(d.e, ba);
    for (int i = 0; i < 3; i++)
        d.pl->buffer_free(d.e, bo[i]);
    direct_close(&d);
    assert_int_equal(validation_lines, 0);
}

/* ---- other primitives, and the flag -------------------------------------------------- */

#define CK_N 6 /* elements of every operand below */

/* A buffer of CK_N f32 holding v. */
static tf_engine_buffer *buffer_with(direct *d, const float *v)
{
    tf_engine_buffer *b;
    void *hp;
    assert_int_equal(d->pl->buffer_alloc(d->e, CK_N * sizeof(float), &b, &hp), TF_OK);
    assert_int_equal(d->pl->upload(d->e, b, 0, v, CK_N * sizeof(float)), TF_OK);
    return b;
}

/* Fails unless buffer b holds exactly want[0 .. CK_N). */
static void assert_holds(direct *d, const tf_engine_buffer *b, const float *want, const char *what)
{
    float got[CK_N];
    assert_int_equal(d->pl->download(d->e, b, 0, got, sizeof got), TF_OK);
    for (int i = 0; i < CK_N; i++) {
        if (memcmp(&got[i], &want[i], sizeof got[i]) != 0)
            fail_msg("%s: element %d is %g, want %g", what, i, (double)got[i], (double)want[i]);
    }
}

/* The operands and params the cases below are made of. */
typedef struct bench_t {
    direct d;
    tf_engine_buffer *ba, *bb, *bo, *bo2;
    int64_t shape[TF_MAX_RANK + 1], strides[TF_MAX_RANK + 1];
    tf_operand a, b, out, out2;
    float va[CK_N], vb[CK_N], sentinel[CK_N];
} bench;

static void bench_open(bench *t)
{
    direct_open(&t->d);
    for (int i = 0; i < CK_N; i++) {
        t->va[i] = (float)(i + 1);
        t->vb[i] = 0.5f * (float)i;
        t->sentinel[i] = -77.0f;
    }
    for (int k = 0; k <= TF_MAX_RANK; k++) {
        t->shape[k] = k == 0 ? CK_N : 1;
        t->strides[k] = 1;
    }
    t->ba = buffer_with(&t->d, t->va);
    t->bb = buffer_with(&t->d, t->vb);
    t->bo = buffer_with(&t->d, t->sentinel);
    t->bo2 = buffer_with(&t->d, t->sentinel);
    t->a = operand(t->ba, 1, t->shape, t->strides);
    t->b = operand(t->bb, 1, t->shape, t->strides);
    t->out = operand(t->bo, 1, t->shape, t->strides);
    t->out2 = operand(t->bo2, 1, t->shape, t->strides);
}

static void bench_close(bench *t)
{
    t->d.pl->buffer_free(t->d.e, t->ba);
    t->d.pl->buffer_free(t->d.e, t->bb);
    t->d.pl->buffer_free(t->d.e, t->bo);
    t->d.pl->buffer_free(t->d.e, t->bo2);
    direct_close(&t->d);
    assert_int_equal(validation_lines, 0);
}

/* Fails unless out holds -a: the UNARY NEG call of the cases ran. */
static void assert_negated(bench *t, const char *what)
{
    float want[CK_N];
    for (int i = 0; i < CK_N; i++)
        want[i] = -t->va[i];
    assert_holds(&t->d, t->bo, want, what);
}

/* Fails unless the last call failed with `want`, reported with the engine's message. */
static void assert_refused(const char *what, tf_status st, tf_status want)
{
    if (st != want)
        fail_msg("%s: %s (want %s): %s", what, tf_status_name(st), tf_status_name(want),
                 last_error);
    assert_int_equal(last_status, want);
    if (strncmp(last_error, "vulkan: ", 8) != 0)
        fail_msg("%s: reported \"%s\"", what, last_error);
}

/*
 * Without TF_EXEC_VALIDATED every malformed call is refused with the core's error kind
 * before anything is recorded (both outputs keep their contents), also from a 1.0 host
 * whose tf_exec ends before flags (the flag it cannot send is not read); the same call
 * made valid computes.
 */
static void test_unvalidated_calls_refused(void **state)
{
    (void)state;
    bench t;
    bench_open(&t);
    tf_unary_params neg = {sizeof neg, TF_UNARY_NEG}, bad_op = {sizeof neg, TF_UNARY_COUNT_};
    tf_unary_params lnot = {sizeof neg, TF_UNARY_LOGICAL_NOT};
    tf_binary_params add = {sizeof add, TF_BINARY_ADD};
    tf_concatenate_params cat = {sizeof cat, 0};
    tf_operand ib = t.b, away = t.a, deep = t.a, za = t.a, zb = t.b, zo = t.out;
    ib.dtype = TF_I32;
    za.dtype = zb.dtype = zo.dtype = TF_C64; /* (refused before anything reads them) */
    tf_convert_params checked = {sizeof checked, 1};
    tf_unary_params abs_op = {sizeof abs_op, TF_UNARY_ABS};
    tf_binary_params max_op = {sizeof max_op, TF_BINARY_MAX}, cx = {sizeof cx, TF_BINARY_COMPLEX};
    const tf_operand *z1[1] = {&za}, *z2[2] = {&za, &zb}, *zo1[1] = {&zo}, *ab[2] = {&t.a, &t.b};
    away.buffer = NULL;
    deep.rank = TF_MAX_RANK + 1;
    const tf_operand *a1[1] = {&t.a}, *none[1] = {NULL}, *away1[1] = {&away}, *deep1[1] = {&deep};
    const tf_operand *six[6] = {&t.a, &t.b, &t.a, &t.b, &t.a, &t.b}, *mixed[2] = {&t.a, &ib};
    const tf_operand *o1[1] = {&t.out}, *o2[2] = {&t.out, &t.out2};
    struct bad {
        const char *what;
        uint32_t prim;
        const void *params;
        uint32_t n_in;
        const tf_operand *const *in;
        uint32_t n_out;
        const tf_operand *const *out;
        tf_status want;
    } bads[] = {
        {"two outputs of UNARY", TF_PRIM_UNARY, &neg, 1, a1, 2, o2, TF_ERR_VALIDATION},
        {"six inputs of BINARY", TF_PRIM_BINARY, &add, 6, six, 1, o1, TF_ERR_VALIDATION},
        {"inputs NULL", TF_PRIM_UNARY, &neg, 1, NULL, 1, o1, TF_ERR_VALIDATION},
        {"outputs NULL", TF_PRIM_UNARY, &neg, 1, a1, 1, NULL, TF_ERR_VALIDATION},
        {"an input NULL", TF_PRIM_UNARY, &neg, 1, none, 1, o1, TF_ERR_VALIDATION},
        {"params NULL", TF_PRIM_UNARY, NULL, 1, a1, 1, o1, TF_ERR_VALIDATION},
        {"an unknown primitive", TF_PRIM_COUNT_, &neg, 1, a1, 1, o1, TF_ERR_VALIDATION},
        {"an unknown unary op", TF_PRIM_UNARY, &bad_op, 1, a1, 1, o1, TF_ERR_UNSUPPORTED},
        {"logical_not of f32", TF_PRIM_UNARY, &lnot, 1, a1, 1, o1, TF_ERR_UNSUPPORTED},
        {"add of f32 and i32", TF_PRIM_BINARY, &add, 2, mixed, 1, o1, TF_ERR_UNSUPPORTED},
        {"concatenate of f32 and i32", TF_PRIM_CONCATENATE, &cat, 2, mixed, 1, o1,
         TF_ERR_DTYPE_MISMATCH},
        {"an input without a buffer", TF_PRIM_UNARY, &neg, 1, away1, 1, o1, TF_ERR_PLACEMENT},
        {"an input of rank 9", TF_PRIM_UNARY, &neg, 1, deep1, 1, o1, TF_ERR_PLACEMENT},
        /* complex (ABI 1.4): what the host refuses is refused here too, with its kinds */
        {"checked convert of c64 to f32", TF_PRIM_CONVERT, &checked, 1, z1, 1, o1,
         TF_ERR_DTYPE_MISMATCH},
        {"abs of c64 into c64", TF_PRIM_UNARY, &abs_op, 1, z1, 1, zo1, TF_ERR_UNSUPPORTED},
        {"max of c64", TF_PRIM_BINARY, &max_op, 2, z2, 1, zo1, TF_ERR_UNSUPPORTED},
        {"complex of f32 parts into f32", TF_PRIM_BINARY, &cx, 2, ab, 1, o1, TF_ERR_UNSUPPORTED},
    };
    for (size_t i = 0; i < COUNT(bads); i++) {
        const struct bad *c = &bads[i];
        tf_status st = direct_prim(&t.d, c->prim, c->params, c->n_in, c->in, c->n_out, c->out, 0);
        assert_refused(c->what, st, c->want);
    }
    /* A 1.0 host: its struct ends before flags, so what lies there is not the flag. */
    tf_exec old = {.struct_size = offsetof(tf_exec, flags),
                   .prim = TF_PRIM_UNARY,
                   .params = &neg,
                   .n_inputs = 1,
                   .n_outputs = 2,
                   .inputs = a1,
                   .outputs = o2,
                   .flags = TF_EXEC_VALIDATED};
    assert_refused("two outputs from a 1.0 host", direct_call(&t.d, &old), TF_ERR_VALIDATION);
    assert_holds(&t.d, t.bo, t.sentinel, "output 0 after the refusals");
    assert_holds(&t.d, t.bo2, t.sentinel, "output 1 after the refusals");

    assert_int_equal(direct_prim(&t.d, TF_PRIM_UNARY, &neg, 1, a1, 1, o1, 0), TF_OK);
    assert_negated(&t, "the valid call");
    old.n_outputs = 1;
    assert_int_equal(direct_call(&t.d, &old), TF_OK); /* and from a 1.0 host */
    assert_negated(&t, "the valid call of a 1.0 host");
    bench_close(&t);
}

/*
 * With TF_EXEC_VALIDATED the engine does not check again: a UNARY call with an extra
 * output, which only its checks refuse (no dispatch reads it), runs and leaves the
 * extra output alone. What the host cannot know is still refused: an operand whose
 * addresses exceed this engine's 32-bit indexing, before anything is recorded.
 */
static void test_validated_calls_not_rechecked(void **state)
{
    (void)state;
    bench t;
    bench_open(&t);
    tf_unary_params neg = {sizeof neg, TF_UNARY_NEG};
    const tf_operand *a1[1] = {&t.a}, *o2[2] = {&t.out, &t.out2};
    assert_int_equal(direct_prim(&t.d, TF_PRIM_UNARY, &neg, 1, a1, 2, o2, TF_EXEC_VALIDATED),
                     TF_OK);
    assert_negated(&t, "the validated call");
    assert_holds(&t.d, t.bo2, t.sentinel, "the extra output of the validated call");

    int64_t two[1] = {2}, far[1] = {(int64_t)1 << 31}, dense[1] = {1};
    tf_operand wide = operand(t.ba, 1, two, far), small = operand(t.bo2, 1, two, dense);
    const tf_operand *w1[1] = {&wide}, *s1[1] = {&small};
    tf_status st = direct_prim(&t.d, TF_PRIM_UNARY, &neg, 1, w1, 1, s1, TF_EXEC_VALIDATED);
    assert_refused("an input past 2^31 addresses", st, TF_ERR_UNSUPPORTED);
    assert_non_null(strstr(last_error, "32-bit"));
    assert_holds(&t.d, t.bo2, t.sentinel, "the output of the refused validated call");
    bench_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fused_engine_checks),
        cmocka_unit_test(test_fused_engine_output_checks),
        cmocka_unit_test(test_unvalidated_calls_refused),
        cmocka_unit_test(test_validated_calls_not_rechecked),
    };
    return cmocka_run_group_tests_name("vulkan checks", tests, vk_group_setup, vk_group_teardown);
}
