/*
 * test_defer_faults.c - what happens when the engine fails a deferred batch.
 *
 * A session defers back-to-back elementwise ops and runs them as one
 * TF_PRIM_FUSED call when a result is read (core/src/lazy/defer.c). The `faulty`
 * fixture engine (tests/plugins/fixtures/faulty.c) runs FILL and ADD, and
 * FUSED programs of ADDs, on f64, and fails every execute after its Kth with
 * "injected fault (...)". The program, on tensors of N elements:
 *
 *   x = full(1);  y = full(2);  a = x + y;  b = a + x      (a = 3, b = 4)
 *
 * in TF_DEFER_ALWAYS mode (the default mode leaves arrays this small eager
 * on a host-memory engine). The two FILLs are executes 1 and 2; the adds
 * wait in one batch, so with K = 2 the batch's FUSED call is the one that
 * fails. The tests check where the failure surfaces (the read that ran the
 * batch, tf_session_set_defer, tf_engine_synchronize, the end of
 * tf_runtime_with_session), that every later read of the batch's results is
 * a TF_ERR_BACKEND error that writes nothing, that a batch whose results are
 * all gone makes no engine call, and that with deferral off (or in the
 * default mode) the op itself fails, as before. A sum of b joins the batch
 * as its tail (executes 3: FUSED, 4: REDUCE): either call failing loses the
 * sum, and the FUSED one the adds' results too.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, strdup */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/engine.h>
#include <tenferro/ops.h>

#include "tf_ref.h"

#ifndef TF_FIXTURE_DIR
#error "TF_FIXTURE_DIR must be defined by the build"
#endif

#define N 4
#define SENTINEL ((tf_eager *)(uintptr_t)0x5e5e5e50)

static tf_runtime *g_rt;

/* A faulty engine failing every execute after the kth (k < 0: never). */
static tf_engine *faulty(long k)
{
    char value[32];
    snprintf(value, sizeof value, "%ld", k);
    tf_engine *e = NULL;
    TF_ASSERT_OK(tfr_engine_create(TF_FIXTURE_DIR "/tenferro-engine-faulty.so", 1,
                                   k >= 0 ? "fail_after" : NULL, value, &e));
    return e;
}

typedef struct program {
    tf_eager *x, *y, *a, *b;
} program;

/* The program, deferred whatever its size (TF_DEFER_AUTO leaves arrays this
   small on a host-memory engine eager). */
static tf_status build(tf_session *s, void *user)
{
    program *p = user;
    int64_t shape[1] = {N};
    TF_ASSERT_OK(tf_session_set_defer(s, TF_DEFER_ALWAYS));
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 1.0, &p->x));
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 2.0, &p->y));
    TF_ASSERT_OK(tf_session_add(s, p->x, p->y, &p->a));
    TF_ASSERT_OK(tf_session_add(s, p->a, p->x, &p->b));
    return TF_OK;
}

static void release_program(program *p)
{
    tf_eager_release(p->x);
    tf_eager_release(p->y);
    tf_eager_release(p->a);
    tf_eager_release(p->b);
}

static tf_defer_stats stats_of(tf_session *s)
{
    tf_defer_stats st;
    TF_ASSERT_OK(tf_session_defer_stats(s, &st));
    return st;
}

/* st failed with the engine's injected fault as the cause. */
static void assert_injected(tf_status st, const char *what)
{
    if (st != TF_ERR_BACKEND)
        fail_msg("%s: got %s (\"%s\"), want TF_ERR_BACKEND", what, tf_status_name(st),
                 tf_error_message());
    if (!strstr(tf_error_cause(), "injected fault"))
        fail_msg("%s: cause \"%s\" (message \"%s\") is not the engine's", what, tf_error_cause(),
                 tf_error_message());
}

/* Every way of reading v fails with TF_ERR_BACKEND ("lost") and writes nothing. */
static void assert_lost(tf_session *s, tf_eager *v, tf_eager *other, const char *what)
{
    tf_tensor *t = tf_eager_value(v);
    const void *data = &data;
    size_t count = 77;
    tf_error_clear();
    TF_ASSERT_STATUS(tf_tensor_data(t, TF_F64, &data, &count), TF_ERR_BACKEND);
    if (!strstr(tf_error_message(), "lost"))
        fail_msg("%s: message \"%s\" does not say the value was lost", what, tf_error_message());
    assert_ptr_equal(data, &data);
    assert_int_equal(count, 77);

    double buf[N] = {-7, -7, -7, -7}, want[N] = {-7, -7, -7, -7};
    TF_ASSERT_STATUS(tf_tensor_copy_to_host(t, TF_F64, buf, N), TF_ERR_BACKEND);
    assert_memory_equal(buf, want, sizeof buf);

    tf_tensor *host = (tf_tensor *)&host;
    TF_ASSERT_STATUS(tf_engine_download(tf_tensor_engine(t), t, &host), TF_ERR_BACKEND);
    assert_ptr_equal(host, &host);

    /* an op on it creates nothing and joins no batch, deferred or not (s has
       nothing open) */
    uint64_t deferred = stats_of(s).ops_deferred;
    static const tf_defer_mode modes[2] = {TF_DEFER_OFF, TF_DEFER_ALWAYS};
    for (int m = 0; m < 2; m++) {
        TF_ASSERT_OK(tf_session_set_defer(s, modes[m]));
        tf_eager *c = SENTINEL;
        TF_ASSERT_STATUS(tf_session_add(s, v, other, &c), TF_ERR_BACKEND);
        assert_ptr_equal(c, SENTINEL);
        TF_ASSERT_STATUS(tf_session_add(s, other, v, &c), TF_ERR_BACKEND);
        assert_ptr_equal(c, SENTINEL);
    }
    assert_int_equal(stats_of(s).ops_deferred, deferred);
}

/* t holds `value` in each of its N elements. */
static void assert_tensor_value(const tf_tensor *t, double value)
{
    double got[N], want[N];
    for (int i = 0; i < N; i++)
        want[i] = value;
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, got, N));
    assert_memory_equal(got, want, sizeof got);
}

static void assert_value(tf_eager *v, double value)
{
    assert_tensor_value(tf_eager_value(v), value);
}

/* ---- the engine answers FUSED, so the adds wait; the values are right ---- */

static void test_deferred_adds_on_faulty(void **state)
{
    for (int drop_a = 0; drop_a < 2; drop_a++) {
        tf_engine *e = faulty(-1);
        tf_session *s = NULL;
        TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
        program p;
        tf_eager *half = NULL, *c = NULL;
        TF_ASSERT_OK(build(s, &p));
        /* a broadcast operand: a rank-0 constant against [N] */
        TF_ASSERT_OK(tf_session_scalar(s, TF_F64, 0.5, &half));
        TF_ASSERT_OK(tf_session_add(s, p.b, half, &c));
        tf_defer_stats st = stats_of(s);
        assert_int_equal(st.ops_deferred, 3);
        assert_int_equal(st.engine_calls, 0);
        if (drop_a) {
            tf_eager_release(p.a);
            p.a = NULL;
        }
        assert_value(c, 4.5); /* runs the batch: one FUSED call */
        st = stats_of(s);
        assert_int_equal(st.batches_run, 1);
        assert_int_equal(st.engine_calls, 1);
        assert_int_equal(st.results_written, drop_a ? 2 : 3);
        assert_int_equal(st.results_dropped, drop_a ? 1 : 0);
        assert_value(p.b, 4);
        if (!drop_a)
            assert_value(p.a, 3);
        assert_value(p.x, 1);
        assert_value(p.y, 2);
        tf_eager_release(c);
        tf_eager_release(half);
        release_program(&p);
        tf_session_end(s);
        tf_engine_destroy(e);
    }
}

/* ---- a failed batch: the read that ran it gets the error, later reads "lost" ---- */

static void test_failed_batch_loses_its_results(void **state)
{
    tf_engine *e = faulty(2);
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
    program p;
    TF_ASSERT_OK(build(s, &p));
    tf_defer_stats st = stats_of(s);
    assert_int_equal(st.ops_deferred, 2);
    assert_int_equal(st.batches_run, 0);
    assert_int_equal(st.engine_calls, 0);

    const void *data = &data;
    size_t count = 77;
    tf_error_clear();
    assert_injected(tf_tensor_data(tf_eager_value(p.b), TF_F64, &data, &count), "read b");
    assert_ptr_equal(data, &data);
    assert_int_equal(count, 77);
    st = stats_of(s);
    assert_int_equal(st.batches_run, 1);
    assert_int_equal(st.engine_calls, 1);

    assert_lost(s, p.a, p.x, "a");
    assert_lost(s, p.b, p.y, "b");
    /* the inputs are intact; nothing is left to run */
    assert_value(p.x, 1);
    assert_value(p.y, 2);
    TF_ASSERT_OK(tf_engine_synchronize(e));
    st = stats_of(s);
    assert_int_equal(st.ops_deferred, 2);
    assert_int_equal(st.batches_run, 1);
    assert_int_equal(st.engine_calls, 1);

    release_program(&p);
    tf_session_end(s);
    tf_engine_destroy(e);
}

/* ---- a failed tail: the sum of b, run after the batch ---- */

/* The rank-0 v cannot be read: TF_ERR_BACKEND saying "lost", nothing written. */
static void assert_scalar_lost(tf_eager *v)
{
    const void *data = &data;
    size_t count = 77;
    tf_error_clear();
    TF_ASSERT_STATUS(tf_tensor_data(tf_eager_value(v), TF_F64, &data, &count), TF_ERR_BACKEND);
    if (!strstr(tf_error_message(), "lost"))
        fail_msg("message \"%s\" does not say the value was lost", tf_error_message());
    assert_ptr_equal(data, &data);
    assert_int_equal(count, 77);
    double got = -7;
    TF_ASSERT_STATUS(tf_tensor_copy_to_host(tf_eager_value(v), TF_F64, &got, 1), TF_ERR_BACKEND);
    assert_true(got == -7);
}

static void test_failed_tail(void **state)
{
    (void)state;
    for (long k = 2; k <= 4; k++) { /* the FUSED call fails, the REDUCE, neither */
        tf_engine *e = faulty(k);
        tf_session *s = NULL;
        TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
        program p;
        TF_ASSERT_OK(build(s, &p));
        tf_eager *sum = NULL;
        TF_ASSERT_OK(tf_session_reduce_sum(s, p.b, NULL, 0, &sum));
        tf_defer_stats st = stats_of(s);
        assert_int_equal(st.ops_deferred, 3); /* two adds, the sum */
        assert_int_equal(st.engine_calls, 0);
        double got = -7;
        tf_status rs = tf_tensor_copy_to_host(tf_eager_value(sum), TF_F64, &got, 1);
        st = stats_of(s);
        assert_int_equal(st.batches_run, 1);
        assert_int_equal(st.engine_calls, k == 2 ? 1 : 2);
        if (k == 4) {
            TF_ASSERT_OK(rs);
            assert_true(got == 4.0 * N);
            assert_value(p.b, 4);
        } else {
            assert_injected(rs, k == 2 ? "read the sum (FUSED fails)" : "read the sum (REDUCE fails)");
            assert_true(got == -7);
            assert_scalar_lost(sum);
            if (k == 2) {
                assert_lost(s, p.a, p.x, "a");
                assert_lost(s, p.b, p.y, "b");
            } else { /* the batch's own results were written */
                assert_value(p.a, 3);
                assert_value(p.b, 4);
            }
        }
        tf_eager_release(sum);
        release_program(&p);
        tf_session_end(s);
        tf_engine_destroy(e);
    }
}

/* ---- the failure surfaces wherever the batch runs ---- */

typedef enum runner {
    AT_SESSION_END,
    AT_DEFER_OFF,
    AT_SYNCHRONIZE,
    AT_WITH_SESSION
} runner;

static void test_failure_where_the_batch_runs(void **state)
{
    static const char *const names[] = {"tf_session_end", "tf_session_set_defer(s, TF_DEFER_OFF)",
                                        "tf_engine_synchronize", "tf_runtime_with_session"};
    for (runner r = AT_SESSION_END; r <= AT_WITH_SESSION; r++) {
        tf_engine *e = faulty(2);
        program p;
        tf_session *s = NULL;
        tf_error_clear();
        if (r == AT_WITH_SESSION) {
            assert_injected(tf_runtime_with_session(g_rt, e, build, &p), names[r]);
        } else {
            TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
            TF_ASSERT_OK(build(s, &p));
            assert_int_equal(stats_of(s).ops_deferred, 2);
            if (r == AT_SESSION_END) {
                tf_session_end(s); /* returns nothing: the results say it */
                s = NULL;
            } else if (r == AT_DEFER_OFF) {
                assert_injected(tf_session_set_defer(s, TF_DEFER_OFF), names[r]);
                TF_ASSERT_OK(tf_session_set_defer(s, TF_DEFER_OFF)); /* nothing open any more */
            } else {
                assert_injected(tf_engine_synchronize(e), names[r]);
            }
        }
        if (s) {
            assert_int_equal(stats_of(s).batches_run, 1);
        } else { /* reads from a new session */
            TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
            TF_ASSERT_OK(tf_session_set_defer(s, TF_DEFER_ALWAYS));
        }
        assert_lost(s, p.a, p.x, names[r]);
        assert_lost(s, p.b, p.x, names[r]);
        TF_ASSERT_OK(tf_engine_synchronize(e));
        assert_value(p.x, 1);
        release_program(&p);
        tf_session_end(s);
        tf_engine_destroy(e);
    }
}

/* ---- a batch whose results are all gone is never computed ---- */

static void test_dropped_batch_makes_no_engine_call(void **state)
{
    tf_engine *e = faulty(2); /* the FILLs were the last executes that succeed */
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
    program p;
    TF_ASSERT_OK(build(s, &p));
    tf_eager_release(p.a);
    tf_eager_release(p.b);
    p.a = p.b = NULL;
    TF_ASSERT_OK(tf_engine_synchronize(e));
    tf_defer_stats st = stats_of(s);
    assert_int_equal(st.ops_deferred, 2);
    assert_int_equal(st.batches_run, 1);
    assert_int_equal(st.engine_calls, 0);
    assert_int_equal(st.results_written, 0);
    assert_int_equal(st.results_dropped, 2);
    assert_value(p.x, 1);

    /* the engine was not called: its next execute is the one that fails */
    tf_eager *c = NULL;
    TF_ASSERT_OK(tf_session_add(s, p.x, p.y, &c));
    tf_error_clear();
    assert_injected(tf_engine_synchronize(e), "the next batch");
    assert_lost(s, c, p.x, "c");
    tf_eager_release(c);

    tf_session_end(s);
    release_program(&p);
    tf_engine_destroy(e);

    /* the same at session end, on an engine that has one good execute left:
       the next read gets it, so the dropped batch did not */
    e = faulty(3);
    TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
    TF_ASSERT_OK(build(s, &p));
    tf_eager_release(p.a);
    tf_eager_release(p.b);
    p.a = p.b = NULL;
    tf_session_end(s);
    TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
    TF_ASSERT_OK(tf_session_add(s, p.x, p.y, &c));
    assert_value(c, 3);
    tf_eager_release(c);
    tf_session_end(s);
    release_program(&p);
    tf_engine_destroy(e);
}

/* ---- deferral off (or small host arrays in the default mode): the op itself fails ---- */

static void test_defer_off_fails_at_the_op(void **state)
{
    int64_t shape[1] = {N};
    for (int i = 0; i < 4; i++) {
        long k = 2 + i % 2;
        tf_engine *e = faulty(k);
        tf_session *s = NULL;
        TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
        if (i < 2)
            TF_ASSERT_OK(tf_session_set_defer(s, TF_DEFER_OFF));
        program p = {NULL, NULL, SENTINEL, SENTINEL};
        TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 1.0, &p.x));
        TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 2.0, &p.y));
        tf_error_clear();
        tf_status st = tf_session_add(s, p.x, p.y, &p.a);
        if (k == 2) {
            assert_injected(st, "a = x + y");
            assert_ptr_equal(p.a, SENTINEL);
            p.a = NULL;
        } else {
            TF_ASSERT_OK(st);
            assert_value(p.a, 3); /* computed at once: no batch holds it */
            assert_injected(tf_session_add(s, p.a, p.x, &p.b), "b = a + x");
            assert_value(p.a, 3);
        }
        assert_ptr_equal(p.b, SENTINEL);
        p.b = NULL;
        assert_int_equal(stats_of(s).ops_deferred, 0);
        assert_value(p.x, 1);
        assert_value(p.y, 2);
        TF_ASSERT_OK(tf_engine_synchronize(e));
        release_program(&p);
        tf_session_end(s);
        tf_engine_destroy(e);
    }
}

/* ---- derivatives defer their elementwise work too ---- */

/* A runtime whose sessions, derivatives' included, begin in `mode` (TENFERRO_DEFER). */
static tf_runtime *runtime_in(const char *mode)
{
    const char *was = getenv("TENFERRO_DEFER");
    char *saved = was ? strdup(was) : NULL;
    assert_int_equal(setenv("TENFERRO_DEFER", mode, 1), 0);
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    assert_int_equal(saved ? setenv("TENFERRO_DEFER", saved, 1) : unsetenv("TENFERRO_DEFER"), 0);
    free(saved);
    return rt;
}

enum {
    CHAIN = 4,
    SETUP_CALLS = 2 + CHAIN
}; /* two FILLs, the forward adds */
typedef enum derivative {
    BACKWARD,
    VJP,
    JVP
} derivative;

/*
 * y = x + x + ... + x (CHAIN adds, run at once) on a faulty engine that fails
 * every execute after the (SETUP_CALLS + k)th, then one derivative of y with
 * a seed of ones: backward (into x's slot), vjp or jvp (all 1 + CHAIN). Its
 * every step is an add: the sum of the CHAIN + 1 terms of x's cotangent, or
 * the tangents' chain. Returns the derivative's status; on success checks
 * the value, on failure that nothing changed (no grad, *out untouched).
 */
static tf_status derivative_with_calls(tf_runtime *rt, derivative d, long k)
{
    tf_engine *e = faulty(SETUP_CALLS + k);
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, e, &s));
    TF_ASSERT_OK(tf_session_set_defer(s, TF_DEFER_OFF)); /* the forward pass runs as issued */
    int64_t shape[1] = {N};
    tf_eager *xc = NULL, *x = NULL, *seed = NULL, *y = NULL;
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 1.0, &xc));
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 1.0, &seed));
    TF_ASSERT_OK(tf_runtime_variable_from(rt, tf_eager_value(xc), &x));
    y = x;
    tf_eager_retain(y);
    for (int i = 0; i < CHAIN; i++) {
        tf_eager *next = NULL;
        TF_ASSERT_OK(tf_session_add(s, y, x, &next));
        tf_eager_release(y);
        y = next;
    }
    tf_eager *out = SENTINEL;
    tf_error_clear();
    tf_status st = d == BACKWARD ? tf_eager_backward_with_seed(y, seed, e)
                   : d == VJP    ? tf_runtime_vjp(rt, e, y, x, seed, &out)
                                 : tf_runtime_jvp(rt, e, y, x, seed, &out);
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    if (st == TF_OK) {
        if (d == BACKWARD)
            assert_non_null(g);
        assert_tensor_value(d == BACKWARD ? g : tf_eager_value(out), 1.0 + CHAIN);
        if (d != BACKWARD)
            tf_eager_release(out);
    } else {
        assert_injected(st, "the derivative");
        assert_ptr_equal(out, SENTINEL);
    }
    if (st != TF_OK || d != BACKWARD)
        assert_null(g); /* a failed backward publishes nothing */
    tf_tensor_release(g);
    tf_eager_release(xc);
    tf_eager_release(x);
    tf_eager_release(seed);
    tf_eager_release(y);
    tf_session_end(s);
    tf_engine_destroy(e);
    return st;
}

static void test_derivatives_defer_their_sums(void **state)
{
    (void)state;
    tf_runtime *always = runtime_in("always"), *off = runtime_in("off");
    for (derivative d = BACKWARD; d <= JVP; d++) {
        /* deferred: every add waits in the derivative's batch, one FUSED call
           at its end; an engine failing that call fails the derivative */
        TF_ASSERT_OK(derivative_with_calls(always, d, 1));
        TF_ASSERT_STATUS(derivative_with_calls(always, d, 0), TF_ERR_BACKEND);
        /* not deferred: one call per add */
        TF_ASSERT_OK(derivative_with_calls(off, d, CHAIN));
        TF_ASSERT_STATUS(derivative_with_calls(off, d, CHAIN - 1), TF_ERR_BACKEND);
    }
    tf_runtime_release(always);
    tf_runtime_release(off);
}

/* ---- a failed call writing over an input only the batch holds ---- */

/* An f64 constant of s's engine memory holding v[0 .. N) (an upload: no execute). */
static tf_eager *uploaded(tf_session *s, const double *v)
{
    int64_t shape[1] = {N};
    tf_tensor *h = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, shape, v, N, &h));
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_session_constant_from_host(s, h, &x));
    tf_tensor_release(h);
    return x;
}

/*
 * b = (d + c) + c with d released before the batch runs: the batch writes b
 * over d's memory (defer_run.c, donor_of; the faulty engine declares
 * TF_ENGINE_CAP_IN_PLACE), as the address of b's elements shows on a sound
 * engine. The engine failing that call loses b like any failed batch, and c,
 * still held, is as it was.
 */
static void test_failed_donation(void **state)
{
    static const double dv[N] = {1, 2, 3, 4}, cv[N] = {10, 20, 30, 40};
    for (int fail = 0; fail <= 1; fail++) {
        tf_engine *e = faulty(fail ? 0 : -1);
        tf_session *s = NULL;
        TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
        TF_ASSERT_OK(tf_session_set_defer(s, TF_DEFER_ALWAYS));
        tf_eager *d = uploaded(s, dv), *c = uploaded(s, cv), *a = NULL, *b = NULL;
        const void *data = NULL;
        size_t count = 0;
        TF_ASSERT_OK(tf_tensor_data(tf_eager_value(d), TF_F64, &data, &count));
        const void *at = data;
        TF_ASSERT_OK(tf_session_add(s, d, c, &a));
        TF_ASSERT_OK(tf_session_add(s, a, c, &b));
        tf_eager_release(d);
        tf_eager_release(a);
        tf_error_clear();
        tf_status st = tf_tensor_data(tf_eager_value(b), TF_F64, &data, &count);
        assert_int_equal(stats_of(s).engine_calls, 1);
        if (fail) {
            assert_injected(st, "read b");
            assert_lost(s, b, c, "b");
        } else {
            TF_ASSERT_OK(st);
            assert_ptr_equal(data, at);
            double got[N];
            TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(b), TF_F64, got, N));
            for (int i = 0; i < N; i++)
                assert_true(got[i] == dv[i] + 2 * cv[i]);
        }
        double got[N];
        TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(c), TF_F64, got, N));
        assert_memory_equal(got, cv, sizeof got);
        tf_eager_release(b);
        tf_eager_release(c);
        tf_session_end(s);
        tf_engine_destroy(e);
    }
}

static void release_all_eager(tf_eager *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tf_eager_release(v[i]);
}

/*
 * A derivative joins the batch its forward still waits in (autodiff.c,
 * share_forward_batch). x a variable of ones, y = (x + x) + x deferred in the
 * application's session, then backward with a seed of ones: the reverse
 * rules' adds (x's cotangent, 1 + 1 + 1) join the forward's batch, and the
 * step is one FUSED call writing y and the gradient. An engine failing that
 * call fails backward with nothing published, and y, a result of the same
 * call, is lost, as when the forward's batch fails on a read.
 */
static tf_status shared_backward(long k, tf_defer_stats *stats)
{
    tf_engine *e = faulty(2 + k); /* after the two FILLs */
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(g_rt, e, &s));
    TF_ASSERT_OK(tf_session_set_defer(s, TF_DEFER_ALWAYS));
    int64_t shape[1] = {N};
    tf_eager *xc = NULL, *seed = NULL, *x = NULL, *xx = NULL, *y = NULL;
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 1.0, &xc));
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, shape, 1.0, &seed));
    TF_ASSERT_OK(tf_runtime_variable_from(g_rt, tf_eager_value(xc), &x));
    TF_ASSERT_OK(tf_session_add(s, x, x, &xx));
    TF_ASSERT_OK(tf_session_add(s, xx, x, &y));
    tf_eager_release(xx); /* only the tape holds it, for `+`, whose rule reads no value */
    xx = NULL;
    assert_int_equal(stats_of(s).engine_calls, 0); /* the forward waits */
    tf_error_clear();
    tf_status st = tf_eager_backward_with_seed(y, seed, e);
    *stats = stats_of(s);
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    if (st == TF_OK) {
        assert_non_null(g);
        assert_tensor_value(g, 3.0);
        assert_value(y, 3.0);
    } else {
        assert_injected(st, "backward");
        assert_null(g); /* nothing published */
        assert_lost(s, y, x, "y");
    }
    assert_value(x, 1.0); /* the variable is intact either way */
    tf_tensor_release(g);
    release_all_eager((tf_eager *[]){xc, seed, x, xx, y}, 5);
    tf_session_end(s);
    tf_engine_destroy(e);
    return st;
}

static void test_backward_shares_the_forward_batch(void **state)
{
    (void)state;
    tf_defer_stats st;
    TF_ASSERT_OK(shared_backward(1, &st));
    /* the forward's two adds and the reverse rules' in one batch, one call */
    assert_true(st.ops_deferred > 2);
    assert_int_equal(st.batches_run, 1);
    assert_int_equal(st.engine_calls, 1);
    assert_int_equal(st.results_written, 2); /* y and the gradient; x + x is dropped */
    TF_ASSERT_STATUS(shared_backward(0, &st), TF_ERR_BACKEND);
    assert_int_equal(st.batches_run, 1);
    assert_int_equal(st.engine_calls, 1);
}

static int group_setup(void **state)
{
    TF_ASSERT_OK(tf_runtime_create(&g_rt));
    return 0;
}

static int group_teardown(void **state)
{
    tf_runtime_release(g_rt);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deferred_adds_on_faulty),
        cmocka_unit_test(test_failed_batch_loses_its_results),
        cmocka_unit_test(test_failed_tail),
        cmocka_unit_test(test_failure_where_the_batch_runs),
        cmocka_unit_test(test_dropped_batch_makes_no_engine_call),
        cmocka_unit_test(test_defer_off_fails_at_the_op),
        cmocka_unit_test(test_derivatives_defer_their_sums),
        cmocka_unit_test(test_failed_donation),
        cmocka_unit_test(test_backward_shares_the_forward_batch),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
