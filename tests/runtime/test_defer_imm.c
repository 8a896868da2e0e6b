/*
 * test_defer_imm.c - the referee of FUSED immediates (engine ABI 1.5): scalar
 * constants the session filled join a deferred batch as immediates of its
 * FUSED call instead of as inputs (core/src/lazy/defer.c).
 *
 * Random composed programs over one shape: leaves (one a transposed view),
 * 0-d constants and a constant of the full shape made by tf_session_full,
 * shared values and fan-out, views of results (a reshape there and back,
 * which runs the open batch), a reduction joining a batch as its tail and
 * broadcast back, constants used by several steps and programs, more
 * distinct constants than a call takes immediates (the rest become inputs),
 * the same constant tensor read as an immediate and as an ordinary input (of
 * a reduction, and of the batch once its immediates are full), and a
 * constant's memory overwritten by a FILL through tf_engine_execute between
 * two ops that read it. Each program runs with deferral off and always, on
 * the CPU engine and on the CPU engine without FUSED (the batch's steps one
 * primitive each, reading the immediates' tensors): every value, read at
 * the end, has the same bits in all three. Built as test_defer_imm_vulkan,
 * the same programs on the Vulkan engine (lavapipe) with deferral always
 * against the CPU engine with deferral off, within a tolerance.
 *
 * Then a directed case pins the engine calls: six distinct constants over
 * two tensors in one call, which without immediates (8 operands) takes more.
 */
#include <math.h>
#include <string.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"
#include "tf_ref.h"

#define ROWS 6
#define COLS 5
#define NUMEL (ROWS * COLS)
#define MAX_VALUES 96
#define PROGRAMS 60
#define OPS_PER_PROGRAM 40

static const int64_t k_shape[2] = {ROWS, COLS};

static tf_engine *g_cpu1, *g_cpu_nofuse, *g_vulkan;

static uint64_t g_state;
static uint64_t next(void)
{
    g_state ^= g_state << 13;
    g_state ^= g_state >> 7;
    g_state ^= g_state << 17;
    return g_state;
}
static uint32_t pick(uint32_t n)
{
    return (uint32_t)(next() % n);
}
static double unif(double lo, double hi)
{
    return lo + (hi - lo) * (double)(next() >> 11) / 9007199254740992.0;
}

/* One run of a program: its values, all of shape k_shape (constants: 0-d or full). */
typedef struct run {
    tf_runtime *rt;
    tf_session *s;
    tf_engine *e;
    tf_eager *v[MAX_VALUES];
    uint32_t n;
    uint32_t consts[MAX_VALUES]; /* indices of the constants among v */
    uint32_t n_consts;
} run;

static void push(run *r, tf_eager *x)
{
    assert_non_null(x);
    assert_true(r->n < MAX_VALUES);
    r->v[r->n++] = x;
}

static void push_const(run *r, tf_eager *x)
{
    r->consts[r->n_consts++] = r->n;
    push(r, x);
}

/* A value to read: recent ones more often (chains), any of them otherwise (fan-out). */
static tf_eager *arg(run *r)
{
    uint32_t k = pick(4) == 0 ? pick(r->n) : r->n - 1 - pick(r->n < 4 ? r->n : 4);
    return r->v[k];
}

/* arg() of the full shape (a leaf if the pick is 0-d). */
static tf_eager *full_arg(run *r)
{
    tf_eager *x = arg(r);
    return tf_tensor_rank(tf_eager_value(x)) == 2 ? x : r->v[pick(3)];
}

static tf_eager *const_arg(run *r)
{
    return r->v[r->consts[pick(r->n_consts)]];
}

typedef tf_status (*bin_fn)(tf_session *, tf_eager *, tf_eager *, tf_eager **);
typedef tf_status (*un_fn)(tf_session *, tf_eager *, tf_eager **);

static const bin_fn k_binary[] = {tf_session_add,     tf_session_sub,     tf_session_mul,
                                  tf_session_maximum, tf_session_minimum, tf_session_div};
static const un_fn k_unary[] = {tf_session_neg, tf_session_sin, tf_session_tanh, tf_session_abs};

/* Overwrites the memory of constant x with a FILL of `value` (the eager order: later
   reads see it, earlier ones must not). */
static void refill(run *r, tf_eager *x, double value)
{
    tf_tensor *t = (tf_tensor *)tf_eager_value(x);
    tf_fill_params p = {.struct_size = sizeof p, .value = {value, 0}};
    TF_ASSERT_OK(tf_engine_execute(r->e, TF_PRIM_FILL, &p, 0, NULL, 1, &t));
}

/* One op of the program (the random choices are the same in every run of a seed). */
static void step(run *r)
{
    uint32_t what = pick(20);
    tf_eager *y = NULL;
    if (what < 8) { /* binary, one operand often a constant */
        bin_fn f = k_binary[pick(5 + (what == 7))];
        tf_eager *a = pick(3) == 0 ? const_arg(r) : arg(r);
        tf_eager *b = pick(2) == 0 ? const_arg(r) : arg(r);
        if (f == tf_session_div) { /* away from 0: |b| + 2 */
            tf_eager *m = NULL;
            TF_ASSERT_OK(tf_session_abs(r->s, b, &m));
            push(r, m);
            TF_ASSERT_OK(tf_session_add(r->s, m, r->v[r->consts[0]], &b));
            push(r, b);
        }
        TF_ASSERT_OK(f(r->s, a, b, &y));
    } else if (what < 11) {
        TF_ASSERT_OK(k_unary[pick(4)](r->s, arg(r), &y));
    } else if (what < 13) { /* a new constant (so that immediates run out) */
        TF_ASSERT_OK(tf_session_scalar(r->s, TF_F64, (double)(int)unif(-8, 8) / 4.0, &y));
        push_const(r, y);
        return;
    } else if (what == 13) { /* a view of a result and back: runs the batch */
        const int64_t flat = NUMEL;
        tf_eager *f = NULL;
        TF_ASSERT_OK(tf_session_reshape(r->s, full_arg(r), 1, &flat, &f));
        TF_ASSERT_OK(tf_session_reshape(r->s, f, 2, k_shape, &y));
        tf_eager_release(f);
    } else if (what == 14) { /* a tail, broadcast back into the next batch */
        tf_eager *sum = NULL;
        TF_ASSERT_OK(tf_session_reduce_sum(r->s, arg(r), NULL, 0, &sum));
        push(r, sum);
        TF_ASSERT_OK(tf_session_mul(r->s, sum, arg(r), &y));
    } else if (what == 15) { /* a constant as an ordinary input of a reduction */
        tf_eager *sum = NULL;
        TF_ASSERT_OK(tf_session_reduce_sum(r->s, const_arg(r), NULL, 0, &sum));
        push(r, sum);
        TF_ASSERT_OK(tf_session_add(r->s, sum, const_arg(r), &y));
    } else if (what == 16 && r->n_consts > 1) { /* a constant's memory changes */
        refill(r, r->v[r->consts[1 + pick(r->n_consts - 1)]], unif(-2, 2));
        return;
    } else { /* the same constant in several steps of one program */
        tf_eager *k = const_arg(r), *t = NULL;
        TF_ASSERT_OK(tf_session_mul(r->s, arg(r), k, &t));
        push(r, t);
        TF_ASSERT_OK(tf_session_sub(r->s, t, k, &y));
    }
    push(r, y);
}

/* A leaf in the engine's memory (host memory never joins a batch). */
static tf_eager *leaf(run *r, const double *data, int transposed)
{
    const int64_t tshape[2] = {COLS, ROWS};
    tf_tensor *h = tft_host(TF_F64, 2, transposed ? tshape : k_shape, data, NUMEL);
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_session_constant_from_host(r->s, h, &x));
    tf_tensor_release(h);
    if (!transposed)
        return x;
    tf_eager *y = NULL;
    TF_ASSERT_OK(tf_session_transpose(r->s, x, (const int[]){1, 0}, &y));
    tf_eager_release(x);
    return y;
}

/* Runs program `seed` on e with deferral `mode`; out[v * NUMEL ..] the values (a 0-d
   one broadcast), *n how many. */
static void run_program(uint64_t seed, tf_engine *e, tf_defer_mode mode, double *out, uint32_t *n)
{
    run r = {0};
    r.e = e;
    TF_ASSERT_OK(tf_runtime_create(&r.rt));
    TF_ASSERT_OK(tf_session_begin(r.rt, e, &r.s));
    TF_ASSERT_OK(tf_session_set_defer(r.s, mode));
    g_state = seed * 0x9E3779B97F4A7C15ull + 1;
    double data[NUMEL];
    for (int l = 0; l < 3; l++) {
        for (int i = 0; i < NUMEL; i++)
            data[i] = unif(-1.5, 1.5);
        push(&r, leaf(&r, data, l == 2));
    }
    tf_eager *c = NULL;
    TF_ASSERT_OK(tf_session_scalar(r.s, TF_F64, 2.0, &c)); /* consts[0]: div's offset */
    push_const(&r, c);
    TF_ASSERT_OK(tf_session_scalar(r.s, TF_F64, 0.75, &c));
    push_const(&r, c);
    TF_ASSERT_OK(tf_session_full(r.s, TF_F64, 2, k_shape, -0.5, &c));
    push_const(&r, c);
    for (int k = 0; k < OPS_PER_PROGRAM && r.n + 8 < MAX_VALUES; k++) {
        step(&r);
        /* release some values early: results only a batch holds are dropped */
        if (pick(4) == 0 && r.n > 8) {
            uint32_t j = 6 + pick(r.n - 7);
            int is_const = 0;
            for (uint32_t q = 0; q < r.n_consts; q++)
                is_const |= r.consts[q] == j;
            if (!is_const && j + 1 < r.n) {
                tf_eager_release(r.v[j]);
                r.v[j] = r.v[j - 1];
                tf_eager_retain(r.v[j]);
            }
        }
    }
    for (uint32_t i = 0; i < r.n; i++) {
        tf_tensor *h = NULL;
        TF_ASSERT_OK(tf_engine_download(e, tf_eager_value(r.v[i]), &h));
        const void *d = NULL;
        size_t cnt = 0;
        TF_ASSERT_OK(tf_tensor_data(h, TF_F64, &d, &cnt));
        assert_true(cnt == NUMEL || cnt == 1);
        for (size_t j = 0; j < NUMEL; j++) /* a 0-d value broadcast */
            out[(size_t)i * NUMEL + j] = ((const double *)d)[cnt == 1 ? 0 : j];
        tf_tensor_release(h);
    }
    *n = r.n;
    for (uint32_t i = 0; i < r.n; i++)
        tf_eager_release(r.v[i]);
    tf_session_end(r.s);
    tf_runtime_release(r.rt);
}

static double g_ref[MAX_VALUES * NUMEL], g_got[MAX_VALUES * NUMEL];

static void expect_same(const char *what, uint64_t seed, uint32_t n, double tol)
{
    for (size_t i = 0; i < (size_t)n * NUMEL; i++) {
        double a = g_ref[i], b = g_got[i];
        int ok = tol == 0 ? memcmp(&a, &b, sizeof a) == 0
                          : (isnan(a) && isnan(b)) || a == b ||
                                fabs(a - b) <= tol * (1 + fabs(a));
        if (!ok)
            fail_msg("%s, program %llu: value %zu element %zu: %.17g, expected %.17g", what,
                     (unsigned long long)seed, i / NUMEL, i % NUMEL, b, a);
    }
}

static void test_composed_programs(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= PROGRAMS; seed++) {
        uint32_t n_ref = 0, n = 0;
        run_program(seed, g_cpu1, TF_DEFER_OFF, g_ref, &n_ref);
        if (g_vulkan) {
            run_program(seed, g_vulkan, TF_DEFER_ALWAYS, g_got, &n);
            assert_int_equal(n, n_ref);
            expect_same("vulkan, deferral always", seed, n, 1e-6);
            continue;
        }
        run_program(seed, g_cpu1, TF_DEFER_ALWAYS, g_got, &n);
        assert_int_equal(n, n_ref);
        expect_same("cpu, deferral always", seed, n, 0);
        run_program(seed, g_cpu_nofuse, TF_DEFER_ALWAYS, g_got, &n);
        assert_int_equal(n, n_ref);
        expect_same("cpu fused=off, deferral always", seed, n, 0);
    }
}

/* x * k1 + k2 - k3 ... over two tensors and six distinct constants: one FUSED call. */
static void test_constants_take_no_inputs(void **state)
{
    (void)state;
    tf_engine *e = g_vulkan ? g_vulkan : g_cpu1;
    tf_runtime *rt = NULL;
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    TF_ASSERT_OK(tf_session_begin(rt, e, &s));
    TF_ASSERT_OK(tf_session_set_defer(s, TF_DEFER_ALWAYS));
    double xd[NUMEL], yd[NUMEL], want[NUMEL];
    for (int i = 0; i < NUMEL; i++) {
        xd[i] = 0.1 * i - 1;
        yd[i] = 0.05 * i;
    }
    tf_tensor *hx = tft_host(TF_F64, 2, k_shape, xd, NUMEL), *hy = tft_host(TF_F64, 2, k_shape, yd, NUMEL);
    tf_eager *x = NULL, *y = NULL;
    TF_ASSERT_OK(tf_session_constant_from_host(s, hx, &x));
    TF_ASSERT_OK(tf_session_constant_from_host(s, hy, &y));
    tf_tensor_release(hx);
    tf_tensor_release(hy);
    const double kv[6] = {1.5, -0.25, 3.0, 0.125, -2.0, 0.5};
    tf_eager *k[6], *acc = NULL, *t = NULL;
    for (int j = 0; j < 6; j++)
        TF_ASSERT_OK(tf_session_scalar(s, TF_F64, kv[j], &k[j]));
    TF_ASSERT_OK(tf_session_mul(s, x, k[0], &acc));
    for (int j = 1; j < 6; j++) {
        TF_ASSERT_OK((j % 2 ? tf_session_add : tf_session_mul)(s, acc, k[j], &t));
        tf_eager_release(acc);
        acc = t;
    }
    TF_ASSERT_OK(tf_session_add(s, acc, y, &t));
    tf_eager_release(acc);
    acc = t;
    for (int i = 0; i < NUMEL; i++) {
        double a = xd[i] * kv[0];
        for (int j = 1; j < 6; j++)
            a = j % 2 ? a + kv[j] : a * kv[j];
        want[i] = a + yd[i];
    }
    tf_defer_stats st;
    TF_ASSERT_OK(tf_engine_synchronize(e));
    TF_ASSERT_OK(tf_session_defer_stats(s, &st));
    tf_tensor *h = NULL;
    TF_ASSERT_OK(tf_engine_download(e, tf_eager_value(acc), &h));
    const void *d = NULL;
    size_t cnt = 0;
    TF_ASSERT_OK(tf_tensor_data(h, TF_F64, &d, &cnt));
    for (int i = 0; i < NUMEL; i++) /* the CPU engine's bits; lavapipe's within rounding */
        assert_true(g_vulkan ? fabs(((const double *)d)[i] - want[i]) <= 1e-12
                             : memcmp((const double *)d + i, &want[i], sizeof want[i]) == 0);
    tf_tensor_release(h);
    assert_int_equal(st.ops_deferred, 7);
    assert_int_equal(st.engine_calls, 1); /* 2 inputs, 6 immediates, 7 steps */
    tf_eager_release(acc);
    tf_eager_release(x);
    tf_eager_release(y);
    for (int j = 0; j < 6; j++)
        tf_eager_release(k[j]);
    tf_session_end(s);
    tf_runtime_release(rt);
}

static int setup(void **state)
{
    (void)state;
#ifdef TF_DEFER_IMM_VULKAN
    if (tfr_engine_create("vulkan", 1, "device_type", "any", &g_vulkan))
        return -1;
#endif
    if (tfr_engine_create("cpu", 1, NULL, NULL, &g_cpu1) ||
        tfr_engine_create("cpu", 1, "fused", "off", &g_cpu_nofuse))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tf_engine_destroy(g_cpu1);
    tf_engine_destroy(g_cpu_nofuse);
    tf_engine_destroy(g_vulkan);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_composed_programs),
        cmocka_unit_test(test_constants_take_no_inputs),
    };
    return cmocka_run_group_tests_name("FUSED immediates", tests, setup, teardown);
}
