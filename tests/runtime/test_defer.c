/*
 * test_defer.c - deferred elementwise chains (core/src/lazy/defer.c).
 *
 * A session's back-to-back elementwise ops are collected and run as one
 * TF_PRIM_FUSED call when a result is first read. Every case runs the same
 * program twice, once with deferral on and once off (tf_session_set_defer),
 * and asserts the same bits; tf_session_defer_stats shows that the deferral
 * really happened (so a case cannot pass by running everything eagerly).
 * Engines: the CPU engine, the CPU engine whose FUSED takes one output only
 * (fused=one: the host runs held intermediates step by step), and the CPU
 * engine without FUSED (nothing is deferred); built as test_defer_vulkan, the
 * Vulkan engine alone (its FUSED equals its own primitives bit for bit too),
 * without the cases that need host memory. The engine failing a batch is
 * test_defer_faults.c's subject; a value read from another thread while its
 * owner goes on is the last case here (label concurrency: it runs under
 * ThreadSanitizer).
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tf_eager_test.h"
#include "tf_ref.h"

#define N 1003 /* not a multiple of any vector width or chunk */

/* g_fused runs FUSED with several outputs; g_one (CPU only) with one output;
   g_plain (CPU only) not at all. */
static tf_engine *g_fused, *g_one, *g_plain;

static int setup(void **state)
{
    (void)state;
#ifdef TF_DEFER_VULKAN
    return tfr_engine_create("vulkan", 1, "device_type", "any", &g_fused) ? -1 : 0;
#else
    if (tfr_engine_create("cpu", 1, NULL, NULL, &g_fused) ||
        tfr_engine_create("cpu", 1, "fused", "one", &g_one) ||
        tfr_engine_create("cpu", 1, "fused", "off", &g_plain))
        return -1;
    return 0;
#endif
}

static int teardown(void **state)
{
    (void)state;
    tf_engine_destroy(g_fused);
    tf_engine_destroy(g_one);
    tf_engine_destroy(g_plain);
    return 0;
}

/* A runtime with two sessions on one engine: `on` in the given mode, `off`
   with deferral off. */
typedef struct pair {
    tf_runtime *rt;
    tf_session *on, *off;
} pair;

static pair pair_begin(tf_engine *e, tf_defer_mode mode)
{
    pair p;
    TF_ASSERT_OK(tf_runtime_create(&p.rt));
    TF_ASSERT_OK(tf_session_begin(p.rt, e, &p.on));
    TF_ASSERT_OK(tf_session_set_defer(p.on, mode));
    TF_ASSERT_OK(tf_session_begin(p.rt, e, &p.off));
    TF_ASSERT_OK(tf_session_set_defer(p.off, TF_DEFER_OFF));
    return p;
}

/* Ends both sessions (p->on may be NULL: ended already) and the runtime. */
static void pair_end(pair *p)
{
    tf_session_end(p->on);
    tf_session_end(p->off);
    tf_runtime_release(p->rt);
}

/* A constant of s's engine memory holding n values from a fixed generator. */
static tf_eager *engine_constant(tf_session *s, tf_dtype dt, size_t n, uint64_t seed, double lo,
                                 double hi)
{
    tfr_rng rng;
    tfr_rng_seed(&rng, seed);
    double *v = test_malloc(n * sizeof *v);
    float *f = test_malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++) {
        v[i] = tfr_rng_real(&rng, lo, hi);
        f[i] = (float)v[i];
    }
    int64_t shape[1] = {(int64_t)n};
    tf_tensor *h = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(dt, 1, shape, dt == TF_F64 ? (void *)v : (void *)f, n, &h));
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_session_constant_from_host(s, h, &x));
    tf_tensor_release(h);
    test_free(v);
    test_free(f);
    return x;
}

/* A copy of t's bytes (the read makes it current), downloaded if need be. */
static void *tensor_bytes(const tf_tensor *t, size_t *nbytes)
{
    tf_tensor *host = NULL;
    if (!tf_tensor_is_host_accessible(t)) {
        TF_ASSERT_OK(tf_engine_download(tf_tensor_engine(t), t, &host));
        t = host;
    }
    const void *data = NULL;
    size_t count = 0;
    TF_ASSERT_OK(tf_tensor_data(t, tf_tensor_dtype(t), &data, &count));
    *nbytes = count * tf_dtype_size(tf_tensor_dtype(t));
    void *copy = test_malloc(*nbytes ? *nbytes : 1);
    memcpy(copy, data, *nbytes);
    tf_tensor_release(host);
    return copy;
}

static void *bytes_of(const tf_eager *x, size_t *nbytes)
{
    return tensor_bytes(tf_eager_value(x), nbytes);
}

static void expect_same_bits(const tf_eager *a, const tf_eager *b)
{
    size_t na, nb;
    void *pa = bytes_of(a, &na), *pb = bytes_of(b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(pa, pb, na);
    test_free(pa);
    test_free(pb);
}

static tf_defer_stats stats_of(tf_session *s)
{
    tf_defer_stats st;
    TF_ASSERT_OK(tf_session_defer_stats(s, &st));
    return st;
}

/* The program of most cases: r[0..5] = exp(x), r0*y, r1+x, sin(r2), r3/y, r4-r0. */
#define CHAIN 6
static void chain(tf_session *s, tf_eager *x, tf_eager *y, tf_eager **r)
{
    TF_ASSERT_OK(tf_session_exp(s, x, &r[0]));
    TF_ASSERT_OK(tf_session_mul(s, r[0], y, &r[1]));
    TF_ASSERT_OK(tf_session_add(s, r[1], x, &r[2]));
    TF_ASSERT_OK(tf_session_sin(s, r[2], &r[3]));
    TF_ASSERT_OK(tf_session_div(s, r[3], y, &r[4]));
    TF_ASSERT_OK(tf_session_sub(s, r[4], r[0], &r[5]));
}

static void release_all(tf_eager **r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tf_eager_release(r[i]);
}

/* Runs chain with deferral on and off on engine e; `keep`: hold every
   intermediate until the end, else release each as soon as used. */
static void run_chain(tf_engine *e, tf_dtype dt, bool keep)
{
    pair p = pair_begin(e, TF_DEFER_ALWAYS);
    tf_session *on = p.on, *off = p.off;
    tf_eager *x = engine_constant(on, dt, N, 1, -1, 1), *y = engine_constant(on, dt, N, 2, 0.5, 2);
    tf_eager *a[CHAIN], *b[CHAIN];
    chain(on, x, y, a);
    chain(off, x, y, b);
    tf_defer_stats before = stats_of(on);
    if (!keep)
        release_all(a, CHAIN - 1); /* only the last result is still held */
    expect_same_bits(a[CHAIN - 1], b[CHAIN - 1]);
    if (keep)
        for (int i = 0; i < CHAIN - 1; i++)
            expect_same_bits(a[i], b[i]);
    tf_defer_stats after = stats_of(on), plain = stats_of(off);
    assert_int_equal(plain.ops_deferred, 0);
    bool fuses = e != g_plain;
    assert_int_equal(before.ops_deferred, fuses ? CHAIN : 0);
    assert_int_equal(before.batches_run, 0); /* nothing was read before */
    if (fuses) {
        assert_int_equal(after.batches_run, 1);
        assert_int_equal(after.results_written, keep ? CHAIN : 1);
        assert_int_equal(after.results_dropped, keep ? 0 : CHAIN - 1);
        /* one call for the whole chain, unless the engine takes one output only
           and intermediates are held: then one per step */
        assert_int_equal(after.engine_calls, keep && e == g_one ? CHAIN : 1);
    }
    release_all(keep ? a : a + CHAIN - 1, keep ? CHAIN : 1);
    release_all(b, CHAIN);
    tf_eager_release(x);
    tf_eager_release(y);
    pair_end(&p);
}

static void test_chain_released(void **state)
{
    (void)state;
    tf_engine *engines[] = {g_fused, g_one, g_plain};
    for (int i = 0; i < 3; i++) {
        if (!engines[i])
            continue;
        run_chain(engines[i], TF_F64, false);
        run_chain(engines[i], TF_F32, false);
    }
}

static void test_chain_held(void **state)
{
    (void)state;
    tf_engine *engines[] = {g_fused, g_one, g_plain};
    for (int i = 0; i < 3; i++) {
        if (!engines[i])
            continue;
        run_chain(engines[i], TF_F64, true);
        run_chain(engines[i], TF_F32, true);
    }
}

/* Equal bits of two losses and of two f64 [N] gradients; releases all four. */
static void expect_same_loss_and_grad(tf_eager *la, tf_eager *lb, tf_tensor *ga, tf_tensor *gb)
{
    expect_same_bits(la, lb);
    size_t na, nb;
    void *da = tensor_bytes(ga, &na), *db = tensor_bytes(gb, &nb);
    assert_int_equal(na, N * sizeof(double));
    assert_int_equal(nb, na);
    assert_memory_equal(da, db, na);
    test_free(da);
    test_free(db);
    tf_tensor_release(ga);
    tf_tensor_release(gb);
    tf_eager_release(la);
    tf_eager_release(lb);
}

/* loss = sum(exp(x) * y + x): values and gradients equal with deferral on and off. */
static void grad_of(tf_session *s, tf_runtime *rt, tf_eager *y, tf_eager **loss_out,
                    tf_tensor **grad_out)
{
    tf_eager *xc = engine_constant(s, TF_F64, N, 3, -1, 1);
    tf_eager *x = NULL, *e = NULL, *m = NULL, *p = NULL, *loss = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(rt, tf_eager_value(xc), &x));
    TF_ASSERT_OK(tf_session_exp(s, x, &e));
    TF_ASSERT_OK(tf_session_mul(s, e, y, &m));
    TF_ASSERT_OK(tf_session_add(s, m, x, &p));
    TF_ASSERT_OK(tf_session_reduce_sum(s, p, NULL, 0, &loss));
    TF_ASSERT_OK(tf_eager_backward(loss, tf_session_engine(s)));
    TF_ASSERT_OK(tf_eager_grad(x, grad_out));
    *loss_out = loss;
    tf_eager_release(xc);
    tf_eager_release(x);
    tf_eager_release(e);
    tf_eager_release(m);
    tf_eager_release(p);
}

/* ABI 1.6: whether e takes a sum as a FUSED call's reduced output beside m elementwise
   outputs of n_in f64 inputs (the CPU engine does, fused=one only with m 0; Vulkan not). */
static bool fuses_sum(tf_engine *e, uint32_t n_in, uint32_t m)
{
    tf_dtype d[TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_OUTPUTS + 1];
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        d[i] = TF_F64;
    return tf_engine_supports(e, TF_PRIM_FUSED, TF_FUSED_REDUCE_QUERY(TF_REDUCE_SUM, m), d,
                              n_in + m + 1) != 0;
}

static void test_gradient(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_runtime *rt = p.rt;
    tf_session *on = p.on, *off = p.off;
    tf_eager *y = engine_constant(on, TF_F64, N, 4, 0, 1);
    tf_eager *la, *lb;
    tf_tensor *ga, *gb;
    grad_of(on, rt, y, &la, &ga);
    grad_of(off, rt, y, &lb, &gb);
    tf_defer_stats st = stats_of(on);
    /* exp, *, + and the sum (the batch's tail), then the reverse rules' ops, which join
       the forward's batch (autodiff.c, share_forward_batch) */
    assert_true(st.ops_deferred > 4);
    assert_int_equal(st.batches_run, 1);
    /* one call writing exp(x), its product, the sum's input (grad_of holds all three) and
       the gradient, the sum as its reduced output (ABI 1.6), or a call of its own */
    assert_int_equal(st.engine_calls, fuses_sum(g_fused, 2, 4) ? 1 : 2);
    expect_same_loss_and_grad(la, lb, ga, gb);
    tf_eager_release(y);
    pair_end(&p);
}

/*
 * A reduction of a batch result joins the batch as its tail. The training
 * step's usual shape: loss = sum(exp(x) * y + x), the intermediates released
 * as soon as the loss is issued, then backward. The batch waits, and
 * backward's reverse rules join it: exp(x)'s rule reads exp(x) as a step of
 * the same program. The tape holds exp(x) (exp's rule reads its result),
 * exp(x) * y only as an input of `+`, whose rule reads no value, and the
 * sum's input as the tail's: so exp(x) * y is not written. Values and
 * gradients are the eager bits.
 */
static void tail_step(tf_session *s, tf_runtime *rt, tf_eager *xv, tf_eager *y, tf_eager **loss,
                      tf_tensor **grad)
{
    tf_eager *e = NULL, *m = NULL, *p = NULL;
    TF_ASSERT_OK(tf_session_exp(s, xv, &e));
    TF_ASSERT_OK(tf_session_mul(s, e, y, &m));
    TF_ASSERT_OK(tf_session_add(s, m, xv, &p));
    TF_ASSERT_OK(tf_session_reduce_sum(s, p, NULL, 0, loss));
    tf_eager_release(e);
    tf_eager_release(m);
    tf_eager_release(p);
    TF_ASSERT_OK(tf_runtime_clear_grads(rt));
    TF_ASSERT_OK(tf_eager_backward(*loss, tf_session_engine(s)));
    TF_ASSERT_OK(tf_eager_grad(xv, grad));
}

static void tail_training_step(tf_engine *e)
{
    pair p = pair_begin(e, TF_DEFER_ALWAYS);
    tf_eager *xc = engine_constant(p.on, TF_F64, N, 30, -1, 1);
    tf_eager *y = engine_constant(p.on, TF_F64, N, 31, 0, 1), *xv = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(p.rt, tf_eager_value(xc), &xv));
    tf_eager *la = NULL, *lb = NULL;
    tf_tensor *ga = NULL, *gb = NULL;
    tail_step(p.on, p.rt, xv, y, &la, &ga);
    tf_defer_stats st = stats_of(p.on);
    tail_step(p.off, p.rt, xv, y, &lb, &gb);
    if (e == g_plain) {
        assert_int_equal(st.ops_deferred, 0);
    } else {
        /* the forward (exp, *, + and the sum) and backward's reverse rules in one batch:
           the derivative joins the batch its graph's forward ops wait in (autodiff.c,
           share_forward_batch), which runs once, at the end of backward */
        assert_true(st.ops_deferred > 4);
        assert_int_equal(st.batches_run, 1);
        /* ABI 1.6: where the engine takes the sum as a FUSED call's reduced output beside
           exp(x) and the gradient, the sum's input is not written either; fused=one takes
           no reduced output, so there the sum is a call of its own and its input is written */
        bool one = e == g_one, red = fuses_sum(e, 1, 1);
        /* the gradient, [the sum's input,] the sum; not exp(x), which only the tape holds
           (for exp's rule): it stays pending, in a residual batch (defer_run.c) */
        assert_int_equal(st.results_written, red ? 2 : 3);
        /* one FUSED call [and the sum]; one output per call: every step, then the sum */
        assert_int_equal(st.engine_calls, one ? st.ops_deferred : red ? 1 : 2);
    }
    expect_same_loss_and_grad(la, lb, ga, gb);
    tf_eager_release(xv);
    tf_eager_release(xc);
    tf_eager_release(y);
    pair_end(&p);
}

/*
 * What only the tape holds stays pending. After the training step of
 * tail_step, exp(x) is held by the tape alone, for exp's rule, and was not
 * written (a residual batch of its own computes it when read). A second
 * backward through the same tape reads it: the residual runs, and the grad
 * slot accumulates exactly the eager bits; then, the loss released, the tape
 * goes and the residual with it, unrun (test_oom under TENFERRO_DEFER=always
 * checks that nothing is left allocated).
 */
static void test_tape_value_stays_pending(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_eager *xc = engine_constant(p.on, TF_F64, N, 42, -1, 1);
    tf_eager *y = engine_constant(p.on, TF_F64, N, 43, 0, 1), *xv = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(p.rt, tf_eager_value(xc), &xv));
    tf_session *ss[2] = {p.on, p.off};
    tf_eager *loss[2];
    tf_tensor *grad[2];
    for (int k = 0; k < 2; k++) {
        tf_tensor *g1 = NULL;
        tail_step(ss[k], p.rt, xv, y, &loss[k], &g1);
        tf_tensor_release(g1);
        if (k == 0) {
            tf_defer_stats st = stats_of(p.on);
            bool red = fuses_sum(g_fused, 1, 1);
            assert_int_equal(st.batches_run, 1);
            assert_int_equal(st.results_written, red ? 2 : 3); /* not exp(x) */
        }
        /* again, into the same slot: exp's rule reads exp(x) */
        TF_ASSERT_OK(tf_eager_backward(loss[k], tf_session_engine(ss[k])));
        TF_ASSERT_OK(tf_eager_grad(xv, &grad[k]));
    }
    expect_same_loss_and_grad(loss[0], loss[1], grad[0], grad[1]);
    tf_eager_release(xv);
    tf_eager_release(xc);
    tf_eager_release(y);
    pair_end(&p);
}

/* exp(x) held by the tape only as an input of `+` (which reads no value) is
   still written: exp's own rule reads its result. loss = sum((exp(x) + y) * c),
   every intermediate released, the loss read (which runs the batch, before
   backward holds anything of it), then backward. */
static void test_result_read_by_its_own_rule(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_eager *xc = engine_constant(p.on, TF_F64, N, 36, -1, 1);
    tf_eager *y = engine_constant(p.on, TF_F64, N, 37, 0, 1), *xv = NULL;
    tf_eager *c = engine_constant(p.on, TF_F64, N, 38, 0.5, 1.5);
    TF_ASSERT_OK(tf_runtime_variable_from(p.rt, tf_eager_value(xc), &xv));
    tf_session *ss[2] = {p.on, p.off};
    tf_eager *loss[2];
    tf_tensor *grad[2];
    tf_defer_stats st = {0};
    for (int k = 0; k < 2; k++) {
        tf_eager *e = NULL, *q = NULL, *r = NULL;
        TF_ASSERT_OK(tf_session_exp(ss[k], xv, &e));
        TF_ASSERT_OK(tf_session_add(ss[k], e, y, &q));
        TF_ASSERT_OK(tf_session_mul(ss[k], q, c, &r));
        TF_ASSERT_OK(tf_session_reduce_sum(ss[k], r, NULL, 0, &loss[k]));
        release_all((tf_eager *[]){e, q, r}, 3);
        size_t nbytes;
        test_free(bytes_of(loss[k], &nbytes)); /* the read (a download on a device) */
        TF_ASSERT_OK(tf_runtime_clear_grads(p.rt));
        TF_ASSERT_OK(tf_eager_backward(loss[k], tf_session_engine(ss[k])));
        TF_ASSERT_OK(tf_eager_grad(xv, &grad[k]));
        if (k == 0)
            st = stats_of(p.on);
    }
    assert_int_equal(st.batches_run, 1); /* the loss's read */
    /* exp(x) (its rule's), + (*'s), the sum (ABI 1.6: the FUSED call's reduced output,
       so the tail's input, *, is not written) */
    bool red = fuses_sum(tf_session_engine(p.on), 3, 2); /* exp(x) and + held */
    assert_int_equal(st.results_written, red ? 3 : 4);
    assert_int_equal(st.results_dropped, red ? 1 : 0);
    expect_same_loss_and_grad(loss[0], loss[1], grad[0], grad[1]);
    tf_eager_release(xv);
    tf_eager_release(xc);
    tf_eager_release(y);
    tf_eager_release(c);
    pair_end(&p);
}

static void test_reduce_tail_training_step(void **state)
{
    (void)state;
    tf_engine *engines[] = {g_fused, g_one, g_plain};
    for (int i = 0; i < 3; i++)
        if (engines[i])
            tail_training_step(engines[i]);
}

/* Without a tape (constants, an evaluation): the intermediates released once
   the sum is issued are never written; the sum's input is, and the sum. */
static void tail_evaluation(tf_engine *e, tf_dtype dt)
{
    pair p = pair_begin(e, TF_DEFER_ALWAYS);
    tf_eager *x = engine_constant(p.on, dt, N, 34, -1, 1),
             *y = engine_constant(p.on, dt, N, 35, 0, 1);
    tf_session *ss[2] = {p.on, p.off};
    tf_eager *loss[2];
    tf_defer_stats before = {0};
    for (int k = 0; k < 2; k++) {
        tf_eager *t = NULL, *m = NULL, *q = NULL;
        TF_ASSERT_OK(tf_session_exp(ss[k], x, &t));
        TF_ASSERT_OK(tf_session_mul(ss[k], t, y, &m));
        TF_ASSERT_OK(tf_session_add(ss[k], m, x, &q));
        TF_ASSERT_OK(tf_session_reduce_sum(ss[k], q, NULL, 0, &loss[k]));
        tf_eager_release(t);
        tf_eager_release(m);
        tf_eager_release(q);
        if (k == 0)
            before = stats_of(p.on);
    }
    expect_same_bits(loss[0], loss[1]);
    tf_defer_stats st = stats_of(p.on);
    if (e == g_plain) {
        assert_int_equal(st.ops_deferred, 0);
    } else {
        assert_int_equal(before.ops_deferred, 4);
        assert_int_equal(before.batches_run, 0); /* the sum waited too */
        assert_int_equal(st.batches_run, 1);
        /* ABI 1.6: the sum is the FUSED call's reduced output (fused=one too: it is the
           call's one output), so no elementwise result is written at all */
        bool red = fuses_sum(e, 2, 0);
        assert_int_equal(st.results_written, red ? 1 : 2); /* [the sum's input,] the sum */
        assert_int_equal(st.results_dropped, red ? 3 : 2); /* exp(x), exp(x) * y[, its + x] */
        assert_int_equal(st.engine_calls, red ? 1 : 2);    /* one FUSED call[, the sum] */
    }
    tf_eager_release(loss[0]);
    tf_eager_release(loss[1]);
    tf_eager_release(x);
    tf_eager_release(y);
    pair_end(&p);
}

static void test_reduce_tail_evaluation(void **state)
{
    (void)state;
    tf_engine *engines[] = {g_fused, g_one, g_plain};
    for (int i = 0; i < 3; i++)
        if (engines[i]) {
            tail_evaluation(engines[i], TF_F64);
            tail_evaluation(engines[i], TF_F32);
        }
}

/* The tail's other shapes: max over one axis of a [17, 59] result, a mean (a
   sum and a scaling of the pending sum), a second reduction of the same
   result (runs the batch), an op reading the tail's output, a read of the
   tail's output first. Same bits as deferral off throughout. */
static void test_reduce_tail_forms(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_session *ss[2] = {p.on, p.off};
    tf_eager *x1 = engine_constant(p.on, TF_F32, N, 32, -2, 2), *x = NULL;
    const int64_t two[2] = {17, 59}; /* 17 * 59 = N */
    TF_ASSERT_OK(tf_session_reshape(p.on, x1, 2, two, &x));
    enum {
        MAX1,
        MEAN,
        SUM_A,
        SUM_B,
        SCALED,
        FIRST,
        NV
    };
    tf_eager *v[2][NV];
    tf_defer_stats marks[4];
    for (int k = 0; k < 2; k++) {
        tf_session *s = ss[k];
        tf_eager *t = NULL, *u = NULL, *w = NULL;
        const int ax1[1] = {1}, ax0[1] = {0};
        /* max over axis 1 as the tail; released unread: the batch never runs it */
        TF_ASSERT_OK(tf_session_tanh(s, x, &t));
        TF_ASSERT_OK(tf_session_reduce_max(s, t, ax1, 1, &v[k][MAX1]));
        tf_eager_release(t);
        if (k == 0)
            marks[0] = stats_of(s);
        /* a mean: its sum is the tail, its scaling runs the batch */
        TF_ASSERT_OK(tf_session_sin(s, x, &t));
        TF_ASSERT_OK(tf_session_reduce_mean(s, t, ax0, 1, &v[k][MEAN]));
        tf_eager_release(t);
        if (k == 0)
            marks[1] = stats_of(s);
        /* two sums of one result: the second runs the batch with the first as its tail */
        TF_ASSERT_OK(tf_session_exp(s, x, &t));
        TF_ASSERT_OK(tf_session_mul(s, t, x, &u));
        TF_ASSERT_OK(tf_session_reduce_sum(s, u, NULL, 0, &v[k][SUM_A]));
        TF_ASSERT_OK(tf_session_reduce_sum(s, u, ax1, 1, &v[k][SUM_B]));
        if (k == 0)
            marks[2] = stats_of(s);
        /* an op of the batch's shape reading the tail's output (broadcast) */
        TF_ASSERT_OK(tf_session_sub(s, u, t, &w));
        tf_eager *tot = NULL;
        TF_ASSERT_OK(tf_session_reduce_sum(s, w, NULL, 0, &tot));
        TF_ASSERT_OK(tf_session_mul(s, w, tot, &v[k][SCALED]));
        tf_eager_release(tot);
        tf_eager_release(w);
        tf_eager_release(u);
        tf_eager_release(t);
        /* the tail's output read first */
        TF_ASSERT_OK(tf_session_cos(s, x, &t));
        TF_ASSERT_OK(tf_session_reduce_sum(s, t, NULL, 0, &v[k][FIRST]));
        tf_eager_release(t);
        if (k == 0) {
            size_t nbytes;
            test_free(bytes_of(v[0][FIRST], &nbytes));
            marks[3] = stats_of(s);
        }
    }
    /* the tails joined: each reduction was deferred, with its batch */
    assert_int_equal(marks[0].ops_deferred, 2);
    assert_int_equal(marks[0].batches_run, 0);
    assert_int_equal(marks[1].ops_deferred, 4);
    assert_int_equal(marks[1].batches_run, 1);  /* the mean's scaling ran the max's batch */
    assert_int_equal(marks[2].ops_deferred, 7); /* the second sum was not */
    assert_true(marks[3].results_written > marks[2].results_written);
    for (int i = 0; i < NV; i++)
        expect_same_bits(v[0][i], v[1][i]);
    for (int k = 0; k < 2; k++)
        release_all(v[k], NV);
    tf_eager_release(x);
    tf_eager_release(x1);
    pair_end(&p);
}

/*
 * A reduction of a view of a batch result that has the result's memory, offset and
 * strides but not its extents (the transpose of a [1, 4] result: strides 1 and 1 both
 * ways) is no reduction of the result: it must not become the batch's fused reduced
 * output (found by the differential checker, seed 40064 program 89, as logsumexp of
 * such a transpose failing with TF_ERR_SHAPE_MISMATCH under deferral always).
 */
static void test_reduce_tail_of_a_transpose(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_session *ss[2] = {p.on, p.off};
    tf_eager *x1 = engine_constant(p.on, TF_F64, 4, 33, -1, 1), *x = NULL;
    const int64_t row[2] = {1, 4};
    TF_ASSERT_OK(tf_session_reshape(p.on, x1, 2, row, &x));
    tf_eager *v[2][3];
    for (int k = 0; k < 2; k++) {
        tf_session *s = ss[k];
        tf_eager *t = NULL, *tt = NULL;
        const int perm[2] = {1, 0}, ax1[1] = {1};
        TF_ASSERT_OK(tf_session_exp(s, x, &t));
        TF_ASSERT_OK(tf_session_transpose(s, t, perm, &tt)); /* [4, 1] */
        TF_ASSERT_OK(tf_session_reduce_sum(s, tt, ax1, 1, &v[k][0])); /* [4]: no reduction */
        tf_eager_release(tt);
        tf_eager_release(t);
        TF_ASSERT_OK(tf_session_exp(s, x, &t));
        TF_ASSERT_OK(tf_session_transpose(s, t, perm, &tt));
        TF_ASSERT_OK(tf_session_logsumexp(s, tt, ax1, 1, &v[k][1]));
        tf_eager_release(tt);
        tf_eager_release(t);
        /* and the result itself over its axis 1: a whole reduction, fused */
        TF_ASSERT_OK(tf_session_exp(s, x, &t));
        TF_ASSERT_OK(tf_session_reduce_sum(s, t, ax1, 1, &v[k][2]));
        tf_eager_release(t);
    }
    for (int i = 0; i < 3; i++)
        expect_same_bits(v[0][i], v[1][i]);
    assert_int_equal(tf_tensor_rank(tf_eager_value(v[0][0])), 1);
    assert_int_equal(tf_tensor_numel(tf_eager_value(v[0][0])), 4);
    for (int k = 0; k < 2; k++)
        release_all(v[k], 3);
    tf_eager_release(x);
    tf_eager_release(x1);
    pair_end(&p);
}

/* A tail whose output is released before the batch runs is dropped: nothing
   is computed at all when nothing else is held. */
static void test_reduce_tail_dropped(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_eager *x = engine_constant(p.on, TF_F64, N, 33, -1, 1), *t = NULL, *u = NULL, *r = NULL;
    TF_ASSERT_OK(tf_session_exp(p.on, x, &t));
    TF_ASSERT_OK(tf_session_mul(p.on, t, x, &u));
    TF_ASSERT_OK(tf_session_reduce_sum(p.on, u, NULL, 0, &r));
    tf_eager_release(t);
    tf_eager_release(u);
    tf_eager_release(r);
    TF_ASSERT_OK(tf_engine_synchronize(g_fused));
    tf_defer_stats st = stats_of(p.on);
    assert_int_equal(st.ops_deferred, 3);
    assert_int_equal(st.batches_run, 1);
    assert_int_equal(st.engine_calls, 0);
    assert_int_equal(st.results_written, 0);
    assert_int_equal(st.results_dropped, 3);
    tf_eager_release(x);
    pair_end(&p);
}

/* TENFERRO_DEFER sets the mode new sessions of a runtime begin in. */
static void test_env_default(void **state)
{
    (void)state;
#ifndef TF_DEFER_VULKAN
    static const char *const values[] = {"always", "off", "auto", ""};
    static const uint64_t deferred[] = {2, 0, 0, 0}; /* N elements: below the AUTO size */
    for (int v = 0; v < 4; v++) {
        assert_int_equal(setenv("TENFERRO_DEFER", values[v], 1), 0);
        tf_runtime *rt = NULL;
        tf_session *s = NULL;
        TF_ASSERT_OK(tf_runtime_create(&rt));
        TF_ASSERT_OK(tf_session_begin(rt, g_fused, &s));
        tf_eager *x = engine_constant(s, TF_F64, N, 40, -1, 1), *a = NULL, *b = NULL;
        TF_ASSERT_OK(tf_session_exp(s, x, &a));
        TF_ASSERT_OK(tf_session_mul(s, a, x, &b));
        assert_int_equal(stats_of(s).ops_deferred, deferred[v]);
        release_all((tf_eager *[]){x, a, b}, 3);
        tf_session_end(s);
        tf_runtime_release(rt);
    }
    assert_int_equal(setenv("TENFERRO_DEFER", "sometimes", 1), 0);
    tf_runtime *rt = (tf_runtime *)&rt;
    tf_error_clear();
    assert_int_equal(tf_runtime_create(&rt), TF_ERR_CONFIG);
    assert_ptr_equal(rt, (tf_runtime *)&rt);
    assert_non_null(strstr(tf_error_message(), "TENFERRO_DEFER"));
    assert_int_equal(unsetenv("TENFERRO_DEFER"), 0);
#endif
}

/* Batches close at another shape, past TF_FUSED_MAX_OUTPUTS steps and past
   TF_FUSED_MAX_INPUTS inputs; a view of a pending result is read correctly. */
static void test_batch_limits(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_session *on = p.on, *off = p.off;
    tf_session *ss[2] = {on, off};
    tf_eager *in[7], *out[2] = {NULL, NULL}, *view[2] = {NULL, NULL}, *other[2] = {NULL, NULL};
    for (int i = 0; i < 7; i++)
        in[i] = engine_constant(on, TF_F64, N, 10 + (uint64_t)i, 0.5, 1.5);
    for (int k = 0; k < 2; k++) {
        tf_session *s = ss[k];
        tf_eager *acc = NULL;
        TF_ASSERT_OK(tf_session_mul(s, in[0], in[1], &acc));
        for (int i = 0; i < 20; i++) { /* 21 steps over 7 inputs */
            tf_eager *next = NULL;
            TF_ASSERT_OK((i % 2 ? tf_session_add : tf_session_mul)(s, acc, in[(i + 2) % 7], &next));
            tf_eager_release(acc);
            acc = next;
        }
        /* another shape in between: the [N] batch closes */
        int64_t two[2] = {N, 1};
        TF_ASSERT_OK(tf_session_reshape(s, acc, 2, two, &view[k]));
        TF_ASSERT_OK(tf_session_tanh(s, view[k], &other[k]));
        out[k] = acc;
    }
    tf_defer_stats st = stats_of(on);
    assert_int_equal(st.ops_deferred, 22);
    assert_true(st.batches_run >= 4); /* 21 steps cannot fit fewer batches of 8 */
    expect_same_bits(out[0], out[1]);
    expect_same_bits(view[0], view[1]);
    expect_same_bits(other[0], other[1]);
    for (int k = 0; k < 2; k++) {
        tf_eager_release(out[k]);
        tf_eager_release(view[k]);
        tf_eager_release(other[k]);
    }
    for (int i = 0; i < 7; i++)
        tf_eager_release(in[i]);
    pair_end(&p);
}

/*
 * Writing memory that an open batch reads (the application's own
 * tf_engine_execute into a constant's tensor) runs the batch first: it sees
 * the value the eager order showed it.
 */
static void test_write_after_deferred_read(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_runtime *rt = p.rt;
    tf_session *s = p.on;
    int64_t shape[1] = {N};
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_empty(g_fused, TF_F64, 1, shape, &t));
    tf_fill_params fill = {sizeof fill, 0, {.f = 3.0}, 0};
    TF_ASSERT_OK(tf_engine_execute(g_fused, TF_PRIM_FILL, &fill, 0, NULL, 1, &t));
    tf_eager *c = NULL, *r = NULL;
    TF_ASSERT_OK(tf_runtime_constant_from(rt, t, &c));
    TF_ASSERT_OK(tf_session_add(s, c, c, &r)); /* deferred: reads t later */
    assert_int_equal(stats_of(s).ops_deferred, 1);
    assert_int_equal(stats_of(s).batches_run, 0);
    fill.value.f = -1.0;
    TF_ASSERT_OK(tf_engine_execute(g_fused, TF_PRIM_FILL, &fill, 0, NULL, 1, &t));
    assert_int_equal(stats_of(s).batches_run, 1); /* the write ran it first */
    size_t nbytes;
    double *d = bytes_of(r, &nbytes);
    assert_int_equal(nbytes, N * sizeof *d);
    for (size_t i = 0; i < N; i++)
        assert_true(d[i] == 6.0);
    test_free(d);
    tf_eager_release(r);
    tf_eager_release(c);
    tf_tensor_release(t);
    pair_end(&p);
}

#ifndef TF_DEFER_VULKAN
/* A read refused for its arguments runs nothing: the batch stays open. */
static void test_refused_read_runs_nothing(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    const int64_t shape[1] = {N};
    tf_eager *c = NULL, *r = NULL;
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_empty(g_fused, TF_F64, 1, shape, &t));
    tf_fill_params fill = {sizeof fill, 0, {.f = 1.0}, 0};
    TF_ASSERT_OK(tf_engine_execute(g_fused, TF_PRIM_FILL, &fill, 0, NULL, 1, &t));
    TF_ASSERT_OK(tf_runtime_constant_from(p.rt, t, &c));
    TF_ASSERT_OK(tf_session_add(p.on, c, c, &r)); /* deferred */
    assert_int_equal(stats_of(p.on).ops_deferred, 1);
    assert_int_equal(stats_of(p.on).batches_run, 0);
    const void *data = NULL;
    size_t count = 7;
    assert_true(tf_tensor_is_host_accessible(tf_eager_value(r))); /* the CPU engine's */
    assert_int_equal(tf_tensor_data(tf_eager_value(r), TF_F64, NULL, &count), TF_ERR_VALIDATION);
    assert_int_equal(tf_tensor_data(tf_eager_value(r), TF_F64, &data, NULL), TF_ERR_VALIDATION);
    assert_null(data);
    assert_int_equal(count, 7);
    assert_int_equal(stats_of(p.on).batches_run, 0); /* nothing ran */
    TF_ASSERT_OK(tf_tensor_data(tf_eager_value(r), TF_F64, &data, &count));
    assert_int_equal(stats_of(p.on).batches_run, 1);
    assert_int_equal(count, N);
    size_t nbytes;
    double *d = bytes_of(r, &nbytes);
    for (size_t i = 0; i < N; i++)
        assert_true(d[i] == 2.0);
    test_free(d);
    tf_eager_release(r);
    tf_eager_release(c);
    tf_tensor_release(t);
    pair_end(&p);
}

/*
 * A pending cotangent is never read before its batch runs, not even by the
 * reverse rules' look at host memory for a seed of ones (`*`'s rule skips
 * its product for one): here the cotangent's memory, recycled from tensors
 * of ones, reads 1 until the batch writes 0.5 * 5 into it.
 */
static void test_pending_cotangent_not_peeked(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_session *s = p.on;
    int64_t shape[1] = {1};
    tf_eager *xc = NULL, *x = NULL, *w = NULL, *y = NULL, *a = NULL, *b = NULL, *cot = NULL;
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 2.0, &xc));
    TF_ASSERT_OK(tf_runtime_variable_from(p.rt, tf_eager_value(xc), &x));
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 3.0, &w));
    TF_ASSERT_OK(tf_session_mul(s, x, w, &y));
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 0.5, &a));
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 5.0, &b));
    tf_eager *ones[8];
    for (int i = 0; i < 8; i++)
        TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 1.0, &ones[i]));
    for (int i = 0; i < 8; i++)
        tf_eager_release(ones[i]); /* their blocks go back to the engine's cache */
    uint64_t deferred = stats_of(s).ops_deferred;
    TF_ASSERT_OK(tf_session_mul(s, a, b, &cot));
    assert_int_equal(stats_of(s).ops_deferred, deferred + 1); /* pending */
    tf_eager *g = NULL;
    TF_ASSERT_OK(tf_runtime_vjp(p.rt, g_fused, y, x, cot, &g));
    size_t nbytes;
    double *d = bytes_of(g, &nbytes);
    assert_int_equal(nbytes, sizeof *d);
    assert_true(d[0] == 2.5 * 3.0);
    test_free(d);
    tf_eager *all[] = {xc, x, w, y, a, b, cot, g};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    pair_end(&p);
}

/* The application's own host memory never joins a batch (it may change it). */
static void test_wrapped_host_memory_runs_at_once(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_runtime *rt = p.rt;
    tf_session *s = p.on;
    double mem[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    tf_tensor *w = NULL;
    TF_ASSERT_OK(tf_tensor_wrap_host(TF_F64, 1, shape, mem, 4, NULL, NULL, &w));
    tf_eager *c = NULL, *r = NULL;
    TF_ASSERT_OK(tf_runtime_constant_from(rt, w, &c));
    TF_ASSERT_OK(tf_session_neg(s, c, &r));
    assert_int_equal(stats_of(s).ops_deferred, 0);
    double want[4] = {-1, -2, -3, -4};
    tft_expect_values(tf_eager_value(r), want, 4);
    tf_eager_release(r);
    tf_eager_release(c);
    tf_tensor_release(w);
    pair_end(&p);
}

#endif

/* Results outlive their session (its end runs the batch), also of
   tf_runtime_with_session; synchronize runs what is open. */
static tf_eager *g_kept;
static tf_defer_mode g_body_mode;

static tf_status body(tf_session *s, void *user)
{
    tf_eager *x = user, *e = NULL;
    tf_status st = tf_session_set_defer(s, g_body_mode);
    if (!st)
        st = tf_session_exp(s, x, &e);
    if (!st)
        st = tf_session_mul(s, e, x, &g_kept);
    tf_eager_release(e);
    return st;
}

static void test_session_end_and_synchronize(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_runtime *rt = p.rt;
    tf_session *s = p.on, *off = p.off;
    tf_eager *x = engine_constant(s, TF_F64, N, 5, -1, 1);
    tf_eager *ref = NULL;
    g_body_mode = TF_DEFER_OFF;
    TF_ASSERT_OK(body(off, x));
    ref = g_kept;
    g_body_mode = TF_DEFER_ALWAYS;
    TF_ASSERT_OK(tf_runtime_with_session(rt, g_fused, body, x));
    expect_same_bits(g_kept, ref);
    tf_eager_release(g_kept);
    tf_eager *r = NULL;
    TF_ASSERT_OK(body(s, x));
    r = g_kept;
    assert_int_equal(stats_of(s).batches_run, 0);
    TF_ASSERT_OK(tf_engine_synchronize(g_fused));
    assert_int_equal(stats_of(s).batches_run, 1);
    TF_ASSERT_OK(body(s, x)); /* pending at session end */
    tf_session_end(s);
    p.on = NULL;
    expect_same_bits(g_kept, ref);
    expect_same_bits(r, ref);
    tf_eager_release(g_kept);
    tf_eager_release(r);
    tf_eager_release(ref);
    tf_eager_release(x);
    pair_end(&p);
}

/*
 * TF_DEFER_AUTO (the default). Both engines ask for deferral
 * (TF_ENGINE_CAP_DEFER_CHAINS). The CPU engine computes in host memory:
 * arrays below TF_DEFER_HOST_MIN_BYTES run at once, larger ones are
 * deferred. The Vulkan engine does not: every op is deferred, whatever its
 * size.
 */
static void test_auto_mode(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_AUTO);
    tf_session *s = p.on, *off = p.off;
    size_t big = TF_DEFER_HOST_MIN_BYTES / sizeof(double);
    tf_eager *small = engine_constant(s, TF_F64, N, 8, -1, 1);
    tf_eager *large = engine_constant(s, TF_F64, big, 9, -1, 1);
    tf_eager *r[CHAIN], *q[CHAIN];
    chain(s, small, small, r);
#ifdef TF_DEFER_VULKAN
    const uint64_t small_deferred = CHAIN, calls = 2; /* the small batch, then the large one */
#else
    const uint64_t small_deferred = 0, calls = 1;
#endif
    assert_int_equal(stats_of(s).ops_deferred, small_deferred);
    chain(s, large, large, q);
    assert_int_equal(stats_of(s).ops_deferred, small_deferred + CHAIN);
    tf_eager *ref[CHAIN], *small_ref[CHAIN];
    chain(off, large, large, ref);
    chain(off, small, small, small_ref);
    for (int i = 0; i < CHAIN; i++) {
        expect_same_bits(q[i], ref[i]);
        expect_same_bits(r[i], small_ref[i]);
    }
    assert_int_equal(stats_of(s).engine_calls, calls);
    release_all(r, CHAIN);
    release_all(q, CHAIN);
    release_all(ref, CHAIN);
    release_all(small_ref, CHAIN);
    tf_eager_release(small);
    tf_eager_release(large);
    pair_end(&p);
}

/* Turning deferral off runs what is open; errors of the API itself. */
static void test_set_defer_and_errors(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_session *s = p.on;
    tf_eager *x = engine_constant(s, TF_F64, N, 6, -1, 1), *a = NULL, *b = NULL;
    TF_ASSERT_OK(tf_session_cos(s, x, &a));
    TF_ASSERT_OK(tf_session_set_defer(s, TF_DEFER_OFF));
    tf_defer_stats st = stats_of(s);
    assert_int_equal(st.ops_deferred, 1);
    assert_int_equal(st.batches_run, 1);
    TF_ASSERT_OK(tf_session_cos(s, x, &b)); /* at once */
    assert_int_equal(stats_of(s).ops_deferred, 1);
    expect_same_bits(a, b);
    TF_ASSERT_STATUS(tf_session_set_defer(NULL, TF_DEFER_ALWAYS), TF_ERR_VALIDATION);
    /* an unknown mode changes nothing: the session still runs ops at once */
    TF_ASSERT_STATUS(tf_session_set_defer(s, (tf_defer_mode)7), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "mode");
    tf_eager *c = NULL;
    TF_ASSERT_OK(tf_session_cos(s, x, &c));
    assert_int_equal(stats_of(s).ops_deferred, 1);
    expect_same_bits(a, c);
    tf_eager_release(c);
    TF_ASSERT_STATUS(tf_session_defer_stats(NULL, &st), TF_ERR_VALIDATION);
    TF_ASSERT_STATUS(tf_session_defer_stats(s, NULL), TF_ERR_VALIDATION);
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(x);
    pair_end(&p);
}

#ifndef TF_DEFER_VULKAN
/*
 * A pending value read on another thread while its owner keeps issuing ops
 * on the same engine: the read runs the batch under the engine's lock.
 */
typedef struct reader_arg {
    tf_eager *value;
    void *bytes;
    size_t nbytes;
} reader_arg;

static void *reader(void *p)
{
    reader_arg *a = p;
    const tf_tensor *t = tf_eager_value(a->value);
    const void *data = NULL;
    size_t count = 0;
    if (tf_tensor_data(t, TF_F64, &data, &count) == TF_OK) {
        a->nbytes = count * sizeof(double);
        a->bytes = malloc(a->nbytes);
        memcpy(a->bytes, data, a->nbytes);
    }
    return NULL;
}

static void test_read_from_another_thread(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_session *s = p.on, *off = p.off;
    tf_eager *x = engine_constant(s, TF_F64, N, 7, -1, 1);
    for (int round = 0; round < 20; round++) {
        tf_eager *r[CHAIN], *ref[CHAIN];
        chain(s, x, x, r);
        reader_arg arg = {r[CHAIN - 1], NULL, 0};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, reader, &arg), 0);
        /* the owner goes on: more deferred ops, reads and plain ops */
        tf_eager *more[CHAIN], *sum = NULL;
        chain(s, r[2], x, more);
        TF_ASSERT_OK(tf_session_reduce_sum(s, more[CHAIN - 1], NULL, 0, &sum));
        assert_int_equal(pthread_join(th, NULL), 0);
        chain(off, x, x, ref);
        assert_int_equal(arg.nbytes, N * sizeof(double));
        size_t nb;
        void *want = bytes_of(ref[CHAIN - 1], &nb);
        assert_memory_equal(arg.bytes, want, nb);
        test_free(want);
        free(arg.bytes);
        release_all(r, CHAIN);
        release_all(ref, CHAIN);
        release_all(more, CHAIN);
        tf_eager_release(sum);
    }
    tf_eager_release(x);
    pair_end(&p);
}

/* backward of a loss whose forward waits in a batch of another thread's session */
typedef struct backward_arg {
    tf_eager *loss, *x;
    tf_engine *engine;
    tf_status st;
    tf_tensor *grad;
} backward_arg;

static void *backward_thread(void *p)
{
    backward_arg *a = p;
    a->st = tf_eager_backward(a->loss, a->engine);
    if (a->st == TF_OK)
        a->st = tf_eager_grad(a->x, &a->grad);
    return NULL;
}

/*
 * A derivative joins only a batch opened on its own thread (autodiff.c,
 * share_forward_batch): a session is one thread's, and its batch takes
 * appends from that thread alone. The forward of sum(exp(x) * y + x) waits
 * in this thread's session; backward runs on another: its reverse rules
 * stay in the derivative's own batch (the application's session counts the
 * forward's four ops only), and reading exp(x) there runs the forward's batch
 * under the engine's lock. Values and gradients are the eager bits.
 */
static void test_backward_on_another_thread(void **state)
{
    (void)state;
    pair p = pair_begin(g_fused, TF_DEFER_ALWAYS);
    tf_eager *xc = engine_constant(p.on, TF_F64, N, 40, -1, 1);
    tf_eager *y = engine_constant(p.on, TF_F64, N, 41, 0, 1), *xv = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(p.rt, tf_eager_value(xc), &xv));
    tf_eager *e = NULL, *m = NULL, *q = NULL, *loss = NULL;
    TF_ASSERT_OK(tf_session_exp(p.on, xv, &e));
    TF_ASSERT_OK(tf_session_mul(p.on, e, y, &m));
    TF_ASSERT_OK(tf_session_add(p.on, m, xv, &q));
    TF_ASSERT_OK(tf_session_reduce_sum(p.on, q, NULL, 0, &loss));
    release_all((tf_eager *[]){e, m, q}, 3);
    backward_arg arg = {loss, xv, tf_session_engine(p.on), TF_ERR_RUNTIME_STATE, NULL};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, backward_thread, &arg), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    TF_ASSERT_OK(arg.st);
    tf_defer_stats st = stats_of(p.on);
    assert_int_equal(st.ops_deferred, 4); /* exp, *, + and the sum: nothing of backward's */
    assert_int_equal(st.batches_run, 1);  /* run by the other thread's read of exp(x) */
    tf_eager *lb = NULL;
    tf_tensor *gb = NULL;
    TF_ASSERT_OK(tf_runtime_clear_grads(p.rt));
    tail_step(p.off, p.rt, xv, y, &lb, &gb);
    expect_same_loss_and_grad(loss, lb, arg.grad, gb);
    tf_eager_release(xv);
    tf_eager_release(xc);
    tf_eager_release(y);
    pair_end(&p);
}

#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_released),
        cmocka_unit_test(test_chain_held),
        cmocka_unit_test(test_gradient),
        cmocka_unit_test(test_reduce_tail_training_step),
        cmocka_unit_test(test_reduce_tail_evaluation),
        cmocka_unit_test(test_result_read_by_its_own_rule),
        cmocka_unit_test(test_tape_value_stays_pending),
        cmocka_unit_test(test_reduce_tail_forms),
        cmocka_unit_test(test_reduce_tail_of_a_transpose),
        cmocka_unit_test(test_reduce_tail_dropped),
        cmocka_unit_test(test_batch_limits),
        cmocka_unit_test(test_env_default),
        cmocka_unit_test(test_write_after_deferred_read),
#ifndef TF_DEFER_VULKAN /* host memory: the CPU engine's */
        cmocka_unit_test(test_wrapped_host_memory_runs_at_once),
        cmocka_unit_test(test_pending_cotangent_not_peeked),
        cmocka_unit_test(test_refused_read_runs_nothing),
#endif
        cmocka_unit_test(test_auto_mode),
        cmocka_unit_test(test_session_end_and_synchronize),
        cmocka_unit_test(test_set_defer_and_errors),
#ifndef TF_DEFER_VULKAN /* reads host memory on another thread */
        cmocka_unit_test(test_read_from_another_thread),
        cmocka_unit_test(test_backward_on_another_thread),
#endif
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
