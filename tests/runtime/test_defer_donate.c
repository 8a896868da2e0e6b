/*
 * test_defer_donate.c - a deferred batch whose one result is written over an
 * input only the batch still holds (core/src/lazy/defer_run.c, donor_of;
 * docs/runtime.md, "Writing in place").
 *
 * When a batch runs with one result to write and no reduced output, and one
 * of its inputs is held by nothing but the batch, the CPU engine (which
 * declares TF_ENGINE_CAP_IN_PLACE) computes the result into that input's
 * memory, and the result's storage takes that memory over. It shows as the
 * result's host address: that of the dying input (the result's own memory
 * was allocated while the input lived, so without the donation the two
 * addresses differ). Every case runs its program with deferral always and
 * off and asserts the same bits; the donor held anywhere else (an eager
 * tensor, a view, a grad slot, a second batch, a tape node), or the batch
 * writing two results or a reduced one, or a view of the result, must leave
 * the input's memory unwritten and its values as they were. A failing
 * engine call is test_defer_faults.c's subject. The last case reads a
 * donated result on another thread while the owner runs its batch (label
 * concurrency: it runs under ThreadSanitizer).
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tf_eager_test.h"
#include "tf_ref.h"

#define N 1003 /* not a multiple of any vector width or chunk */

static tf_engine *g_e;

static int setup(void **state)
{
    (void)state;
    return tfr_engine_create("cpu", 1, NULL, NULL, &g_e) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    tf_engine_destroy(g_e);
    return 0;
}

/* A runtime and a session of g_e in `mode`. */
typedef struct env {
    tf_runtime *rt;
    tf_session *s;
} env;

static env env_begin(tf_defer_mode mode)
{
    env v;
    TF_ASSERT_OK(tf_runtime_create(&v.rt));
    TF_ASSERT_OK(tf_session_begin(v.rt, g_e, &v.s));
    TF_ASSERT_OK(tf_session_set_defer(v.s, mode));
    return v;
}

static void env_end(env *v)
{
    tf_session_end(v->s);
    tf_runtime_release(v->rt);
}

/* n values from a fixed generator, uploaded as a constant of s's engine memory. */
static tf_eager *constant(tf_session *s, size_t rank, const int64_t *shape, uint64_t seed)
{
    size_t n = tfr_numel(rank, shape);
    tfr_rng rng;
    tfr_rng_seed(&rng, seed);
    double *v = test_malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = tfr_rng_real(&rng, -1, 1);
    tf_tensor *h = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, rank, shape, v, n, &h));
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_session_constant_from_host(s, h, &x));
    tf_tensor_release(h);
    test_free(v);
    return x;
}

static tf_eager *vector(tf_session *s, uint64_t seed)
{
    const int64_t shape[1] = {N};
    return constant(s, 1, shape, seed);
}

/* The host address of t's elements (the read makes them current). */
static uintptr_t addr_of_tensor(const tf_tensor *t)
{
    const void *data = NULL;
    size_t count = 0;
    TF_ASSERT_OK(tf_tensor_data(t, TF_F64, &data, &count));
    return (uintptr_t)data;
}

static uintptr_t addr_of(const tf_eager *x)
{
    return addr_of_tensor(tf_eager_value(x));
}

/* A copy of t's values (test_free it). */
static double *values_of_tensor(const tf_tensor *t)
{
    const void *data = NULL;
    size_t count = 0;
    TF_ASSERT_OK(tf_tensor_data(t, TF_F64, &data, &count));
    double *copy = test_malloc(count * sizeof *copy);
    memcpy(copy, data, count * sizeof *copy);
    return copy;
}

static double *values_of(const tf_eager *x)
{
    return values_of_tensor(tf_eager_value(x));
}

static void expect_bits(const double *got, const double *want, size_t n)
{
    assert_memory_equal(got, want, n * sizeof *got);
}

static void expect_bits_of(const tf_eager *x, const double *want, size_t n)
{
    double *got = values_of(x);
    expect_bits(got, want, n);
    test_free(got);
}

static tf_eager *scalar(tf_session *s, double v)
{
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_session_scalar(s, TF_F64, v, &x));
    return x;
}

/* r = p * 2 + 1: one input read from memory (the scalars are immediates). */
static tf_eager *affine(tf_session *s, tf_eager *p)
{
    tf_eager *two = scalar(s, 2), *one = scalar(s, 1), *t = NULL, *r = NULL;
    TF_ASSERT_OK(tf_session_mul(s, p, two, &t));
    TF_ASSERT_OK(tf_session_add(s, t, one, &r));
    tf_eager_release(t);
    tf_eager_release(two);
    tf_eager_release(one);
    return r;
}

/* affine(x) on a session with deferral off: the values a case must give. */
static double *affine_plain(const double *x)
{
    env v = env_begin(TF_DEFER_OFF);
    const int64_t shape[1] = {N};
    tf_tensor *h = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, shape, x, N, &h));
    tf_eager *p = NULL;
    TF_ASSERT_OK(tf_session_constant_from_host(v.s, h, &p));
    tf_tensor_release(h);
    tf_eager *r = affine(v.s, p);
    double *want = values_of(r);
    tf_eager_release(r);
    tf_eager_release(p);
    env_end(&v);
    return want;
}

/* ---- the plain case, and an SGD loop as the bench's mlp runs it ---- */

static void test_sole_input_is_donated(void **state)
{
    (void)state;
    env v = env_begin(TF_DEFER_ALWAYS);
    tf_eager *p = vector(v.s, 1);
    double *x = values_of(p);
    uintptr_t at = addr_of(p);
    tf_eager *r = affine(v.s, p);
    tf_eager_release(p); /* only the batch holds it now */
    assert_true(addr_of(r) == at);
    double *want = affine_plain(x);
    expect_bits_of(r, want, N);
    tf_defer_stats st;
    TF_ASSERT_OK(tf_session_defer_stats(v.s, &st));
    assert_int_equal(st.batches_run, 1);
    assert_int_equal(st.engine_calls, 1);
    assert_int_equal(st.results_written, 1);
    test_free(want);
    test_free(x);
    tf_eager_release(r);
    env_end(&v);
}

enum {
    SGD_W,
    SGD_B,
    SGD_PARAMS
};

/*
 * `steps` steps of SGD on loss = sum((X W + b - T)^2), each parameter
 * updated as the bench's mlp does (next = p - lr * g under no-grad, next's
 * value made the new variable, the old one released); returns the final W
 * and b (test_free them) and counts the updates whose result took over the
 * memory of the old parameter or of its gradient.
 */
static void sgd(tf_defer_mode mode, int steps, double **out, int *donated)
{
    env v = env_begin(mode);
    const int64_t xs[2] = {7, 6}, ws[2] = {6, 5}, bs[1] = {5}, ts[2] = {7, 5};
    tf_eager *X = constant(v.s, 2, xs, 11), *T = constant(v.s, 2, ts, 12), *p[SGD_PARAMS];
    tf_eager *w0 = constant(v.s, 2, ws, 13), *b0 = constant(v.s, 1, bs, 14);
    TF_ASSERT_OK(tf_runtime_variable_from(v.rt, tf_eager_value(w0), &p[SGD_W]));
    TF_ASSERT_OK(tf_runtime_variable_from(v.rt, tf_eager_value(b0), &p[SGD_B]));
    tf_eager_release(w0);
    tf_eager_release(b0);
    tf_eager *lr = scalar(v.s, 0.01);
    *donated = 0;
    for (int k = 0; k < steps; k++) {
        tf_eager *t[5] = {NULL}, *loss = NULL;
        TF_ASSERT_OK(tf_session_matmul(v.s, X, p[SGD_W], &t[0]));
        TF_ASSERT_OK(tf_session_add(v.s, t[0], p[SGD_B], &t[1]));
        TF_ASSERT_OK(tf_session_sub(v.s, t[1], T, &t[2]));
        TF_ASSERT_OK(tf_session_mul(v.s, t[2], t[2], &t[3]));
        TF_ASSERT_OK(tf_session_reduce_sum(v.s, t[3], NULL, 0, &loss));
        for (int i = 0; i < 5; i++)
            tf_eager_release(t[i]);
        TF_ASSERT_OK(tf_runtime_clear_grads(v.rt));
        TF_ASSERT_OK(tf_eager_backward(loss, g_e));
        tf_eager_release(loss);
        tf_scope guard;
        TF_ASSERT_OK(tf_scope_begin_no_grad(v.rt, &guard));
        for (int i = 0; i < SGD_PARAMS; i++) {
            tf_tensor *g = NULL;
            tf_eager *ge = NULL, *step = NULL, *next = NULL, *var = NULL;
            TF_ASSERT_OK(tf_eager_grad(p[i], &g));
            assert_non_null(g);
            uintptr_t at_p = addr_of(p[i]), at_g = addr_of_tensor(g);
            TF_ASSERT_OK(tf_runtime_constant_from(v.rt, g, &ge));
            TF_ASSERT_OK(tf_session_mul(v.s, lr, ge, &step));
            TF_ASSERT_OK(tf_session_sub(v.s, p[i], step, &next));
            TF_ASSERT_OK(tf_runtime_variable_from(v.rt, tf_eager_value(next), &var));
            tf_eager_release(p[i]);
            p[i] = var;
            tf_eager_release(next);
            tf_eager_release(step);
            tf_eager_release(ge);
            tf_tensor_release(g);
            uintptr_t at = addr_of(p[i]); /* runs the batch */
            *donated += at == at_p || at == at_g;
        }
        tf_scope_end(&guard);
    }
    out[SGD_W] = values_of(p[SGD_W]);
    out[SGD_B] = values_of(p[SGD_B]);
    for (int i = 0; i < SGD_PARAMS; i++)
        tf_eager_release(p[i]);
    tf_eager_release(X);
    tf_eager_release(T);
    tf_eager_release(lr);
    env_end(&v);
}

static void test_sgd_loop(void **state)
{
    (void)state;
    enum {
        STEPS = 6
    };
    double *on[SGD_PARAMS], *off[SGD_PARAMS];
    int donated_on, donated_off;
    sgd(TF_DEFER_ALWAYS, STEPS, on, &donated_on);
    sgd(TF_DEFER_OFF, STEPS, off, &donated_off);
    expect_bits(on[SGD_W], off[SGD_W], 30);
    expect_bits(on[SGD_B], off[SGD_B], 5);
    assert_int_equal(donated_on, STEPS * SGD_PARAMS); /* every update, as in the bench */
    assert_int_equal(donated_off, 0);                 /* (the addresses tell) */
    for (int i = 0; i < SGD_PARAMS; i++) {
        test_free(on[i]);
        test_free(off[i]);
    }
}

/* ---- the input held elsewhere: never written ---- */

/* r = affine(p) of p's values x, p held elsewhere too: r has memory of its own, right
   values, and p's are as they were. */
static void expect_not_donated(const tf_eager *p, const double *x, const tf_eager *r)
{
    assert_true(addr_of(r) != addr_of(p));
    double *want = affine_plain(x);
    expect_bits_of(r, want, N);
    expect_bits_of(p, x, N);
    test_free(want);
}

static void test_held_by_eager(void **state)
{
    (void)state;
    env v = env_begin(TF_DEFER_ALWAYS);
    tf_eager *p = vector(v.s, 2), *other = NULL;
    TF_ASSERT_OK(tf_eager_from_tensor(tf_eager_value(p), v.rt, &other));
    double *x = values_of(p);
    tf_eager *r = affine(v.s, p);
    tf_eager_release(p); /* `other` still holds the tensor */
    expect_not_donated(other, x, r);
    test_free(x);
    tf_eager_release(r);
    tf_eager_release(other);
    env_end(&v);
}

static void test_held_by_view(void **state)
{
    (void)state;
    env v = env_begin(TF_DEFER_ALWAYS);
    tf_eager *p = vector(v.s, 3), *pv = NULL;
    double *x = values_of(p);
    const int64_t shape[2] = {17, 59}; /* 1003 */
    tf_tensor *view = NULL;
    TF_ASSERT_OK(tf_tensor_reshape(tf_eager_value(p), 2, shape, &view));
    tf_eager *r = affine(v.s, p);
    tf_eager_release(p); /* the view holds the storage */
    assert_true(addr_of(r) != addr_of_tensor(view));
    double *want = affine_plain(x);
    expect_bits_of(r, want, N);
    TF_ASSERT_OK(tf_eager_from_tensor(view, v.rt, &pv));
    expect_bits_of(pv, x, N);
    test_free(want);
    test_free(x);
    tf_eager_release(pv);
    tf_tensor_release(view);
    tf_eager_release(r);
    env_end(&v);
}

/* The gradient in a variable's slot, read by a deferred op: the slot holds it. */
static void test_held_by_grad_slot(void **state)
{
    (void)state;
    env v = env_begin(TF_DEFER_ALWAYS);
    for (int clear = 0; clear <= 1; clear++) {
        tf_eager *c = vector(v.s, 4), *var = NULL, *sq = NULL, *y = NULL;
        TF_ASSERT_OK(tf_runtime_variable_from(v.rt, tf_eager_value(c), &var));
        TF_ASSERT_OK(tf_session_mul(v.s, var, var, &sq));
        TF_ASSERT_OK(tf_session_reduce_sum(v.s, sq, NULL, 0, &y));
        TF_ASSERT_OK(tf_eager_backward(y, g_e));
        test_free(values_of(y)); /* its batch runs: the one below is the affine's alone */
        tf_tensor *g = NULL;
        TF_ASSERT_OK(tf_eager_grad(var, &g));
        tf_eager *ge = NULL;
        TF_ASSERT_OK(tf_runtime_constant_from(v.rt, g, &ge));
        double *x = values_of(ge);
        uintptr_t at_g = addr_of(ge);
        tf_tensor_release(g);
        tf_scope guard;
        TF_ASSERT_OK(tf_scope_begin_no_grad(v.rt, &guard));
        tf_eager *r = affine(v.s, ge);
        tf_scope_end(&guard);
        tf_eager_release(ge);
        if (clear) /* the slot lets go: only the batch holds the gradient */
            TF_ASSERT_OK(tf_runtime_clear_grads(v.rt));
        assert_int_equal(addr_of(r) == at_g, clear);
        double *want = affine_plain(x);
        expect_bits_of(r, want, N);
        if (!clear) {
            TF_ASSERT_OK(tf_eager_grad(var, &g));
            double *kept = values_of_tensor(g);
            expect_bits(kept, x, N); /* the published gradient is as it was */
            test_free(kept);
            tf_tensor_release(g);
        }
        test_free(want);
        test_free(x);
        tf_eager_release(r);
        tf_eager_release(y);
        tf_eager_release(sq);
        tf_eager_release(var);
        tf_eager_release(c);
    }
    env_end(&v);
}

/* Another session's open batch reads the input too. */
static void test_held_by_second_batch(void **state)
{
    (void)state;
    env v = env_begin(TF_DEFER_ALWAYS);
    tf_session *s2 = NULL;
    TF_ASSERT_OK(tf_session_begin(v.rt, g_e, &s2));
    TF_ASSERT_OK(tf_session_set_defer(s2, TF_DEFER_ALWAYS));
    tf_eager *p = vector(v.s, 5), *three = scalar(s2, 3), *q = NULL;
    double *x = values_of(p);
    uintptr_t at = addr_of(p);
    TF_ASSERT_OK(tf_session_mul(s2, p, three, &q)); /* pending in s2's batch */
    tf_eager *r = affine(v.s, p);
    tf_eager_release(p); /* two batches hold it */
    assert_true(addr_of(r) != at);
    double *want = affine_plain(x);
    expect_bits_of(r, want, N);
    double *got = values_of(q); /* s2's batch reads p as it was */
    for (size_t i = 0; i < N; i++)
        assert_true(got[i] == x[i] * 3);
    test_free(got);
    test_free(want);
    test_free(x);
    tf_eager_release(q);
    tf_eager_release(r);
    tf_eager_release(three);
    tf_session_end(s2);
    env_end(&v);
}

/* A recorded value the tape still reads for a gradient. */
static void test_held_by_tape(void **state)
{
    (void)state;
    env v = env_begin(TF_DEFER_ALWAYS);
    tf_eager *c = vector(v.s, 6), *var = NULL, *u = NULL, *uu = NULL, *y = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(v.rt, tf_eager_value(c), &var));
    tf_eager *three = scalar(v.s, 3);
    TF_ASSERT_OK(tf_session_mul(v.s, var, three, &u));
    TF_ASSERT_OK(tf_session_mul(v.s, u, u, &uu)); /* its node reads u */
    TF_ASSERT_OK(tf_session_reduce_sum(v.s, uu, NULL, 0, &y));
    double *xu = values_of(u), *xc = values_of(c);
    uintptr_t at = addr_of(u);
    tf_scope guard;
    TF_ASSERT_OK(tf_scope_begin_no_grad(v.rt, &guard));
    tf_eager *r = affine(v.s, u);
    tf_scope_end(&guard);
    tf_eager_release(u); /* the tape node of u * u still holds it */
    tf_eager_release(uu);
    assert_true(addr_of(r) != at);
    double *want = affine_plain(xu);
    expect_bits_of(r, want, N);
    tf_eager *dv = NULL; /* 2 u * 3 with u as it was */
    TF_ASSERT_OK(tf_runtime_grad(v.rt, g_e, y, var, &dv));
    double *got = values_of(dv);
    for (size_t i = 0; i < N; i++) {
        double d = 2 * (xc[i] * 3) * 3;
        assert_true(fabs(got[i] - d) <= 1e-12 * fabs(d));
    }
    test_free(got);
    test_free(want);
    test_free(xu);
    test_free(xc);
    tf_eager_release(dv);
    tf_eager_release(r);
    tf_eager_release(y);
    tf_eager_release(three);
    tf_eager_release(var);
    tf_eager_release(c);
    env_end(&v);
}

/* ---- the batch's shape: fan-out, immediates, two results, a reduced tail, a view ---- */

/* The donor read by two steps: r = p * p + p. */
static void test_fan_out(void **state)
{
    (void)state;
    double *want = NULL;
    for (int on = 0; on <= 1; on++) {
        env v = env_begin(on ? TF_DEFER_ALWAYS : TF_DEFER_OFF);
        tf_eager *p = vector(v.s, 7), *sq = NULL, *r = NULL;
        uintptr_t at = addr_of(p);
        TF_ASSERT_OK(tf_session_mul(v.s, p, p, &sq));
        TF_ASSERT_OK(tf_session_add(v.s, sq, p, &r));
        tf_eager_release(sq);
        tf_eager_release(p);
        assert_int_equal(addr_of(r) == at, on);
        if (on)
            expect_bits_of(r, want, N);
        else
            want = values_of(r);
        tf_eager_release(r);
        env_end(&v);
    }
    test_free(want);
}

/*
 * A FILL constant read both from memory and as an immediate (p * p: the first
 * operand of a program of constants is read from memory): the batch holds
 * its tensor twice, so it is not donated. A FILL constant read from memory
 * alone (exp(p)) is, and the memory its result takes over is not taken for
 * the FILL's constant afterwards (r + r reads it).
 */
static void test_constants(void **state)
{
    (void)state;
    const int64_t shape[1] = {N};
    double *want[2] = {NULL, NULL};
    for (int on = 0; on <= 1; on++) {
        env v = env_begin(on ? TF_DEFER_ALWAYS : TF_DEFER_OFF);
        tf_eager *p = NULL, *sq = NULL, *e = NULL, *ee = NULL;
        TF_ASSERT_OK(tf_session_full(v.s, TF_F64, 1, shape, 3.0, &p));
        uintptr_t at = addr_of(p);
        TF_ASSERT_OK(tf_session_mul(v.s, p, p, &sq));
        tf_eager_release(p);
        assert_true(addr_of(sq) != at);
        double *nine = values_of(sq);
        for (size_t i = 0; i < N; i++)
            assert_true(nine[i] == 9);
        test_free(nine);
        TF_ASSERT_OK(tf_session_full(v.s, TF_F64, 1, shape, 2.0, &p));
        at = addr_of(p);
        TF_ASSERT_OK(tf_session_exp(v.s, p, &e));
        tf_eager_release(p);
        assert_int_equal(addr_of(e) == at, on);
        TF_ASSERT_OK(tf_session_add(v.s, e, e, &ee));
        tf_eager_release(e);
        double *got = values_of(ee);
        if (on)
            expect_bits(got, want[0], N);
        want[on] = got;
        tf_eager_release(ee);
        tf_eager_release(sq);
        env_end(&v);
    }
    test_free(want[0]);
    test_free(want[1]);
}

static void test_two_results_held(void **state)
{
    (void)state;
    env v = env_begin(TF_DEFER_ALWAYS);
    tf_eager *p = vector(v.s, 8), *two = scalar(v.s, 2), *one = scalar(v.s, 1), *t = NULL,
             *r = NULL;
    double *x = values_of(p);
    uintptr_t at = addr_of(p);
    TF_ASSERT_OK(tf_session_mul(v.s, p, two, &t));
    TF_ASSERT_OK(tf_session_add(v.s, t, one, &r));
    tf_eager_release(p);
    assert_true(addr_of(r) != at && addr_of(t) != at);
    double *want = affine_plain(x), *got = values_of(t);
    expect_bits_of(r, want, N);
    for (size_t i = 0; i < N; i++)
        assert_true(got[i] == x[i] * 2);
    test_free(got);
    test_free(want);
    test_free(x);
    tf_eager_release(r);
    tf_eager_release(t);
    tf_eager_release(two);
    tf_eager_release(one);
    env_end(&v);
}

/* sum(r) of a held r: the call has a reduced output besides r. */
static void test_reduced_tail(void **state)
{
    (void)state;
    env v = env_begin(TF_DEFER_ALWAYS);
    tf_eager *p = vector(v.s, 9), *l = NULL;
    double *x = values_of(p);
    uintptr_t at = addr_of(p);
    tf_eager *r = affine(v.s, p);
    TF_ASSERT_OK(tf_session_reduce_sum(v.s, r, NULL, 0, &l));
    tf_eager_release(p);
    double *lv = values_of(l); /* runs the batch, the sum fused in (ABI 1.6) */
    tf_defer_stats st;
    TF_ASSERT_OK(tf_session_defer_stats(v.s, &st));
    assert_int_equal(st.engine_calls, 1);
    assert_true(addr_of(r) != at);
    double *want = affine_plain(x);
    expect_bits_of(r, want, N);
    test_free(lv);
    test_free(want);
    test_free(x);
    tf_eager_release(l);
    tf_eager_release(r);
    env_end(&v);
}

/* A view of the pending result holds the result's storage. */
static void test_view_of_result(void **state)
{
    (void)state;
    env v = env_begin(TF_DEFER_ALWAYS);
    tf_eager *p = vector(v.s, 10);
    double *x = values_of(p);
    uintptr_t at = addr_of(p);
    tf_eager *r = affine(v.s, p);
    tf_eager_release(p);
    const int64_t shape[2] = {59, 17};
    tf_tensor *view = NULL;
    TF_ASSERT_OK(tf_tensor_reshape(tf_eager_value(r), 2, shape, &view));
    assert_true(addr_of_tensor(view) != at);
    double *want = affine_plain(x), *got = values_of_tensor(view);
    expect_bits(got, want, N);
    expect_bits_of(r, want, N);
    test_free(got);
    test_free(want);
    test_free(x);
    tf_tensor_release(view);
    tf_eager_release(r);
    env_end(&v);
}

/* ---- threads ---- */

typedef struct reader_arg {
    const tf_tensor *t;
    double *values;
} reader_arg;

static void *reader(void *p)
{
    reader_arg *a = p;
    const void *data = NULL;
    size_t count = 0;
    if (tf_tensor_data(a->t, TF_F64, &data, &count) == TF_OK && count == N) {
        a->values = malloc(N * sizeof(double));
        memcpy(a->values, data, N * sizeof(double));
    }
    return NULL;
}

/*
 * A result read on another thread while its owner goes on and runs the batch
 * (an op of another shape does not fit it): whichever thread runs it, the
 * reader gets the values, from the memory the result took over or its own.
 */
static void test_read_from_another_thread(void **state)
{
    (void)state;
    env v = env_begin(TF_DEFER_ALWAYS);
    tf_eager *other = constant(v.s, 1, (const int64_t[]){7}, 12);
    for (int round = 0; round < 20; round++) {
        tf_eager *p = vector(v.s, 100 + (uint64_t)round), *o = NULL;
        double *x = values_of(p), *want = affine_plain(x);
        tf_eager *r = affine(v.s, p);
        tf_eager_release(p);
        reader_arg arg = {tf_eager_value(r), NULL};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, reader, &arg), 0);
        TF_ASSERT_OK(tf_session_exp(v.s, other, &o)); /* another shape: r's batch runs */
        assert_int_equal(pthread_join(th, NULL), 0);
        assert_non_null(arg.values);
        expect_bits(arg.values, want, N);
        free(arg.values);
        test_free(want);
        test_free(x);
        tf_eager_release(o);
        tf_eager_release(r);
    }
    tf_eager_release(other);
    env_end(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sole_input_is_donated),
        cmocka_unit_test(test_sgd_loop),
        cmocka_unit_test(test_held_by_eager),
        cmocka_unit_test(test_held_by_view),
        cmocka_unit_test(test_held_by_grad_slot),
        cmocka_unit_test(test_held_by_second_batch),
        cmocka_unit_test(test_held_by_tape),
        cmocka_unit_test(test_fan_out),
        cmocka_unit_test(test_constants),
        cmocka_unit_test(test_two_results_held),
        cmocka_unit_test(test_reduced_tail),
        cmocka_unit_test(test_view_of_result),
        cmocka_unit_test(test_read_from_another_thread),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
