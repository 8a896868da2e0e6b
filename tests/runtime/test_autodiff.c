/*
 * test_autodiff.c - the behaviour of the eager runtime's automatic
 * differentiation: higher order (grad of grad, Hessian-vector products,
 * forward-over-reverse), grad-slot accumulation and clearing, which
 * variables backward reaches, no-grad and trace-capture scopes (nesting,
 * per thread, per runtime), gradients with respect to intermediates,
 * explicit seeds, detach, very long chains, and the functional forms
 * leaving slots alone.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"
#include "tf_gradcheck.h"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

static void read_tensor(const tf_tensor *t, double *out, size_t n)
{
    assert_non_null(t);
    assert_int_equal(tf_tensor_numel(t), n);
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, out, n));
}

static void expect_tensor(const tf_tensor *t, const double *want, size_t n, double tol)
{
    double got[64];
    assert_true(n <= 64);
    read_tensor(t, got, n);
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol * fmax(1, fabs(want[i]))))
            fail_msg("element %zu: got %.17g, want %.17g", i, got[i], want[i]);
}

static void expect(const tf_eager *x, const double *want, size_t n, double tol)
{
    assert_non_null(x);
    expect_tensor(tf_eager_value(x), want, n, tol);
}

/* Asserts the variable's grad slot holds exactly `want` (NULL: empty). */
static void expect_slot(tf_eager *x, const double *want, size_t n)
{
    tf_tensor *g = (tf_tensor *)0x1;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    if (!want) {
        assert_null(g);
        return;
    }
    assert_non_null(g);
    expect_tensor(g, want, n, 0);
    tf_tensor_release(g);
}

static tf_eager *op2(tf_status (*fn)(tf_session *, tf_eager *, tf_eager *, tf_eager **),
                     tf_session *s, tf_eager *a, tf_eager *b)
{
    tf_eager *r = NULL;
    TF_ASSERT_OK(fn(s, a, b, &r));
    return r;
}

static tf_eager *sum_all(tf_session *s, tf_eager *x)
{
    tf_eager *r = NULL;
    TF_ASSERT_OK(tf_session_reduce_sum(s, x, NULL, 0, &r));
    return r;
}

static tf_eager *grad(tf_runtime *rt, tf_eager *y, tf_eager *x)
{
    tf_eager *g = NULL;
    TF_ASSERT_OK(tf_runtime_grad(rt, g_cpu, y, x, &g));
    return g;
}

/* ===================================================================== */
/* Higher order                                                           */
/* ===================================================================== */

/* d/dx x^3 = 3x^2 and d2/dx2 = 6x, through grad of grad, at several points. */
static void test_second_derivative_cube(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const double pts[] = {-2, -0.5, 0, 1, 3};
    for (size_t i = 0; i < 5; i++) {
        tf_eager *x = tft_f64(f.rt, 1, 0, NULL, &pts[i], 1);
        tf_eager *x2 = op2(tf_session_mul, f.s, x, x), *y = op2(tf_session_mul, f.s, x2, x);
        tf_eager *g = grad(f.rt, y, x);
        expect(g, (double[]){3 * pts[i] * pts[i]}, 1, 1e-15);
        assert_true(tf_eager_tracks_grad(g)); /* the first derivative is differentiable */
        tf_eager *h = grad(f.rt, g, x);
        expect(h, (double[]){6 * pts[i]}, 1, 1e-15);
        tf_eager *t3 = grad(f.rt, h, x); /* and the third: 6 */
        expect(t3, (double[]){6}, 1, 1e-15);
        tf_eager_release(t3);
        tf_eager_release(h);
        tf_eager_release(g);
        tf_eager_release(y);
        tf_eager_release(x2);
        tf_eager_release(x);
    }
    /* the same at every point of a vector at once */
    const int64_t s5[] = {5};
    tf_eager *x = tft_f64(f.rt, 1, 1, s5, pts, 5);
    tf_eager *x2 = op2(tf_session_mul, f.s, x, x), *y = op2(tf_session_mul, f.s, x2, x);
    tf_eager *l = sum_all(f.s, y), *g = grad(f.rt, l, x), *gl = sum_all(f.s, g);
    tf_eager *h = grad(f.rt, gl, x);
    double want[5];
    for (int i = 0; i < 5; i++)
        want[i] = 6 * pts[i];
    expect(h, want, 5, 1e-15);
    tf_eager_release(h);
    tf_eager_release(gl);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(y);
    tf_eager_release(x2);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* ---- a small MLP-like loss: sum(tanh(X W + b)^2) ---- */

static const int64_t kX[] = {4, 3}, kW[] = {3, 2}, kB[] = {2};
static const double kXv[] = {0.5, -1.0, 0.3, 0.8, -0.2, 0.7, 1.1, -0.6, 0.9, 0.1, -0.4, 0.25};
static const double kWv[] = {0.3, -0.5, 0.8, 0.2, -0.7, 0.4};
static const double kBv[] = {0.1, -0.2};
static const double kVv[] = {1.0, -0.5, 0.25, 2.0, -1.5, 0.75}; /* the direction */

/* The loss of W and b (X constant), built from session ops. */
static tf_status mlp_loss(tf_session *s, tf_eager *W, tf_eager *b, tf_eager **out)
{
    tf_tensor *xt = NULL;
    tf_status st = tf_tensor_from_host(TF_F64, 2, kX, kXv, 12, &xt);
    tf_eager *X = NULL, *z = NULL, *a = NULL, *h = NULL;
    if (!st)
        st = tf_session_constant_from_host(s, xt, &X);
    tf_tensor_release(xt);
    if (!st)
        st = tf_session_matmul(s, X, W, &z);
    if (!st)
        st = tf_session_add(s, z, b, &a); /* [4,2] + [2]: broadcast over rows */
    if (!st)
        st = tf_session_tanh(s, a, &h);
    if (!st)
        st = tf_session_reduce_sum_squares(s, h, NULL, 0, out);
    tf_eager_release(X);
    tf_eager_release(z);
    tf_eager_release(a);
    tf_eager_release(h);
    return st;
}

/* dL/dW at W (host values), in a fresh runtime. */
static void mlp_grad_at(const double *w, double *g)
{
    tft_env f = tft_env_begin();
    tf_eager *W = tft_f64(f.rt, 1, 2, kW, w, 6), *b = tft_f64(f.rt, 0, 1, kB, kBv, 2), *l = NULL;
    TF_ASSERT_OK(mlp_loss(f.s, W, b, &l));
    tf_eager *gw = grad(f.rt, l, W);
    read_tensor(tf_eager_value(gw), g, 6);
    tf_eager_release(gw);
    tf_eager_release(l);
    tf_eager_release(b);
    tf_eager_release(W);
    tft_env_end(&f);
}

/*
 * H v three ways: reverse over reverse (grad of <grad, v>), forward over
 * reverse (jvp of grad), and central differences of the gradient.
 */
static void test_hessian_vector_product(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_eager *W = tft_f64(f.rt, 1, 2, kW, kWv, 6), *b = tft_f64(f.rt, 1, 1, kB, kBv, 2), *l = NULL;
    TF_ASSERT_OK(mlp_loss(f.s, W, b, &l));
    tf_eager *gw = grad(f.rt, l, W), *v = tft_f64(f.rt, 0, 2, kW, kVv, 6);
    tf_eager *gv = op2(tf_session_mul, f.s, gw, v), *dot = sum_all(f.s, gv);
    tf_eager *hv_rr = grad(f.rt, dot, W), *hv_fr = NULL;
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, gw, W, v, &hv_fr));

    double ref[6], gp[6], gm[6], wp[6], wm[6], eps = 1e-5;
    for (int i = 0; i < 6; i++) {
        wp[i] = kWv[i] + eps * kVv[i];
        wm[i] = kWv[i] - eps * kVv[i];
    }
    mlp_grad_at(wp, gp);
    mlp_grad_at(wm, gm);
    for (int i = 0; i < 6; i++)
        ref[i] = (gp[i] - gm[i]) / (2 * eps);
    expect(hv_rr, ref, 6, 1e-7);
    expect(hv_fr, ref, 6, 1e-7);
    /* forward over reverse equals reverse over reverse to rounding */
    double rr[6];
    read_tensor(tf_eager_value(hv_rr), rr, 6);
    expect(hv_fr, rr, 6, 1e-13);
    /* the gradient itself against differences of the loss */
    double g0[6];
    read_tensor(tf_eager_value(gw), g0, 6);
    mlp_grad_at(kWv, gp);
    for (int i = 0; i < 6; i++)
        assert_true(g0[i] == gp[i]);

    tf_eager_release(hv_rr);
    tf_eager_release(hv_fr);
    tf_eager_release(dot);
    tf_eager_release(gv);
    tf_eager_release(v);
    tf_eager_release(gw);
    tf_eager_release(l);
    tf_eager_release(b);
    tf_eager_release(W);
    tft_env_end(&f);
}

/* The whole Hessian of the loss in (W, b), checked as the derivative of
   its gradient by gc_check. */
static tf_status call_mlp_grad(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                               tf_eager **out)
{
    (void)n;
    int wrt = *(const int *)user;
    tf_runtime *rt = tf_session_runtime(s);
    tf_scope sc; /* the finite-difference side passes constants: capture them */
    tf_status st = tf_scope_begin_capture_trace(rt, &sc);
    tf_eager *l = NULL;
    if (!st)
        st = mlp_loss(s, xs[0], xs[1], &l);
    if (!st)
        st = tf_runtime_grad(rt, tf_session_engine(s), l, xs[wrt], out);
    tf_scope_end(&sc);
    tf_eager_release(l);
    return st;
}

static void test_hessian_gradcheck(void **state)
{
    (void)state;
    tf_tensor *in[2] = {NULL, NULL};
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 2, kW, kWv, 6, &in[0]));
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, kB, kBv, 2, &in[1]));
    gc_options o = {1e-6, 1e-6, 5, 0, 0};
    for (int wrt = 0; wrt < 2; wrt++)
        gc_check(wrt ? "Hessian rows of b" : "Hessian rows of W", g_cpu, call_mlp_grad, &wrt, in, 2,
                 &o);
    tf_tensor_release(in[0]);
    tf_tensor_release(in[1]);
}

/* ===================================================================== */
/* Grad slots                                                             */
/* ===================================================================== */

static void test_backward_accumulates(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s3[] = {3};
    tf_eager *x = tft_f64(f.rt, 1, 1, s3, (double[]){1, 2, 3}, 3);
    tf_eager *y = tft_f64(f.rt, 1, 0, NULL, (double[]){4}, 1);
    tf_eager *xy = op2(tf_session_mul, f.s, x, y), *l = sum_all(f.s, xy);
    expect_slot(x, NULL, 0);
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    expect_slot(x, (double[]){4, 4, 4}, 3);
    expect_slot(y, (double[]){6}, 1);
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu)); /* accumulates: doubles */
    expect_slot(x, (double[]){8, 8, 8}, 3);
    expect_slot(y, (double[]){12}, 1);

    /* clear one slot: the other keeps its value; both re-accumulate */
    TF_ASSERT_OK(tf_eager_clear_grad(x));
    expect_slot(x, NULL, 0);
    expect_slot(y, (double[]){12}, 1);
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    expect_slot(x, (double[]){4, 4, 4}, 3);
    expect_slot(y, (double[]){18}, 1);

    /* clear all slots of the runtime */
    TF_ASSERT_OK(tf_runtime_clear_grads(f.rt));
    expect_slot(x, NULL, 0);
    expect_slot(y, NULL, 0);
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    expect_slot(x, (double[]){4, 4, 4}, 3);
    expect_slot(y, (double[]){6}, 1);
    /* clearing a tensor without a slot is a no-op */
    TF_ASSERT_OK(tf_eager_clear_grad(l));
    expect_slot(l, NULL, 0);

    /* clear_grads of one runtime leaves another's slots alone */
    tf_runtime *rt2;
    TF_ASSERT_OK(tf_runtime_create(&rt2));
    tf_eager *z = tft_f64(rt2, 1, 0, NULL, (double[]){2}, 1);
    tf_session *s2;
    TF_ASSERT_OK(tf_session_begin(rt2, g_cpu, &s2));
    tf_eager *zz = op2(tf_session_mul, s2, z, z);
    TF_ASSERT_OK(tf_eager_backward(zz, g_cpu));
    TF_ASSERT_OK(tf_runtime_clear_grads(f.rt));
    expect_slot(z, (double[]){4}, 1);
    expect_slot(x, NULL, 0);
    tf_eager_release(zz);
    tf_eager_release(z);
    tf_session_end(s2);
    tf_runtime_release(rt2);

    tf_eager_release(l);
    tf_eager_release(xy);
    tf_eager_release(x);
    tf_eager_release(y);
    tft_env_end(&f);
}

/* backward reaches every variable the output depends on, and no other. */
static void test_backward_reachability(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_eager *a = tft_f64(f.rt, 1, 0, NULL, (double[]){2}, 1);
    tf_eager *b = tft_f64(f.rt, 1, 0, NULL, (double[]){3}, 1);
    tf_eager *c = tft_f64(f.rt, 1, 0, NULL, (double[]){5}, 1); /* unreachable */
    tf_eager *d = tft_f64(f.rt, 1, 0, NULL, (double[]){7}, 1); /* used only under no-grad */
    tf_eager *k = tft_f64(f.rt, 0, 0, NULL, (double[]){10}, 1);
    tf_eager *e = tft_f64(f.rt, 1, 0, NULL, (double[]){-4}, 1); /* reached through sign only */
    tf_eager *cc = op2(tf_session_mul, f.s, c, c);              /* another graph on c */
    tf_scope ng;
    TF_ASSERT_OK(tf_scope_begin_no_grad(f.rt, &ng));
    tf_eager *dk = op2(tf_session_mul, f.s, d, k);
    tf_scope_end(&ng);
    assert_false(tf_eager_tracks_grad(dk));
    tf_eager *ab = op2(tf_session_mul, f.s, a, b), *t = op2(tf_session_add, f.s, ab, a);
    tf_eager *se = NULL;
    TF_ASSERT_OK(tf_session_sign(f.s, e, &se));
    tf_eager *ts = op2(tf_session_mul, f.s, t, se);
    tf_eager *l = op2(tf_session_mul, f.s, ts, dk); /* (a b + a) * sign(e) * 70 */
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    expect_slot(a, (double[]){-(3 + 1) * 70}, 1); /* two paths into a add up */
    expect_slot(b, (double[]){-2 * 70}, 1);
    expect_slot(c, NULL, 0);
    expect_slot(d, NULL, 0);
    expect_slot(e, (double[]){0}, 1); /* reached: a zero derivative, not "no gradient" */
    /* a variable whose user released it but that the graph still holds */
    tf_eager_release(a);
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    expect_slot(b, (double[]){-4 * 70}, 1);
    /* backward of an untracked value is a no-op */
    TF_ASSERT_OK(tf_eager_backward(dk, g_cpu));
    expect_slot(d, NULL, 0);
    tf_eager_release(l);
    tf_eager_release(ts);
    tf_eager_release(se);
    tf_eager_release(e);
    tf_eager_release(t);
    tf_eager_release(ab);
    tf_eager_release(cc);
    tf_eager_release(dk);
    tf_eager_release(k);
    tf_eager_release(b);
    tf_eager_release(c);
    tf_eager_release(d);
    tft_env_end(&f);
}

/* The functional forms return derivatives and never touch a slot. */
static void test_functional_grad_leaves_slots(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s2[] = {2};
    tf_eager *x = tft_f64(f.rt, 1, 1, s2, (double[]){1, -2}, 2);
    tf_eager *xx = op2(tf_session_mul, f.s, x, x), *l = sum_all(f.s, xx);
    tf_eager *g = grad(f.rt, l, x);
    expect(g, (double[]){2, -4}, 2, 0);
    expect_slot(x, NULL, 0);
    tf_eager *one = tft_f64(f.rt, 0, 1, s2, (double[]){1, 1}, 2), *r = NULL;
    TF_ASSERT_OK(tf_runtime_vjp(f.rt, g_cpu, xx, x, one, &r));
    tf_eager_release(r);
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, xx, x, one, &r));
    tf_eager_release(r);
    expect_slot(x, NULL, 0);
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    tf_tensor *before = NULL, *after = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &before));
    tf_eager *g2 = grad(f.rt, l, x);
    TF_ASSERT_OK(tf_eager_grad(x, &after));
    assert_ptr_equal(before, after);
    expect_slot(x, (double[]){2, -4}, 2);
    tf_tensor_release(before);
    tf_tensor_release(after);
    tf_eager_release(g2);
    tf_eager_release(one);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(xx);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* ===================================================================== */
/* Scopes                                                                 */
/* ===================================================================== */

static void test_no_grad_records_nothing(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s2[] = {2};
    tf_eager *x = tft_f64(f.rt, 1, 1, s2, (double[]){3, 4}, 2);
    tf_scope ng;
    TF_ASSERT_OK(tf_scope_begin_no_grad(f.rt, &ng));
    tf_eager *y = op2(tf_session_mul, f.s, x, x), *ly = sum_all(f.s, y);
    tf_scope_end(&ng);
    assert_false(tf_eager_tracks_grad(y));
    assert_false(tf_eager_tracks_grad(ly));
    tf_eager *r = (tf_eager *)0x1;
    TF_ASSERT_OK(tf_runtime_grad_optional(f.rt, g_cpu, ly, x, &r));
    assert_null(r);
    TF_ASSERT_OK(tf_eager_backward(ly, g_cpu));
    expect_slot(x, NULL, 0);
    /* outside the scope, y is a constant: d(sum(y * x))/dx = y */
    tf_eager *yx = op2(tf_session_mul, f.s, y, x), *l = sum_all(f.s, yx);
    assert_true(tf_eager_tracks_grad(l));
    tf_eager *g = grad(f.rt, l, x);
    expect(g, (double[]){9, 16}, 2, 0);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(yx);
    tf_eager_release(ly);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&f);
}

static void test_nested_no_grad(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_eager *x = tft_f64(f.rt, 1, 0, NULL, (double[]){2}, 1), *y;
    tf_scope outer, inner;
    TF_ASSERT_OK(tf_scope_begin_no_grad(f.rt, &outer));
    TF_ASSERT_OK(tf_scope_begin_no_grad(f.rt, &inner));
    y = op2(tf_session_mul, f.s, x, x);
    assert_false(tf_eager_tracks_grad(y));
    tf_eager_release(y);
    tf_scope_end(&inner);
    y = op2(tf_session_mul, f.s, x, x); /* still inside the outer scope */
    assert_false(tf_eager_tracks_grad(y));
    tf_eager_release(y);
    tf_scope_end(&outer);
    y = op2(tf_session_mul, f.s, x, x);
    assert_true(tf_eager_tracks_grad(y));
    tf_eager_release(y);
    /* capture inside no-grad records nothing; no-grad inside capture neither */
    tf_eager *c = tft_f64(f.rt, 0, 0, NULL, (double[]){5}, 1), *r = (tf_eager *)0x1;
    tf_scope cap;
    TF_ASSERT_OK(tf_scope_begin_no_grad(f.rt, &outer));
    TF_ASSERT_OK(tf_scope_begin_capture_trace(f.rt, &cap));
    y = op2(tf_session_mul, f.s, c, c);
    tf_scope_end(&cap);
    tf_scope_end(&outer);
    TF_ASSERT_OK(tf_runtime_grad_optional(f.rt, g_cpu, y, c, &r));
    assert_null(r);
    tf_eager_release(y);
    TF_ASSERT_OK(tf_scope_begin_capture_trace(f.rt, &cap));
    TF_ASSERT_OK(tf_scope_begin_no_grad(f.rt, &inner));
    y = op2(tf_session_mul, f.s, c, c);
    tf_scope_end(&inner);
    tf_eager *y2 = op2(tf_session_mul, f.s, c, c); /* capture is active again */
    tf_scope_end(&cap);
    r = (tf_eager *)0x1;
    TF_ASSERT_OK(tf_runtime_grad_optional(f.rt, g_cpu, y, c, &r));
    assert_null(r);
    tf_eager *g = grad(f.rt, y2, c);
    expect(g, (double[]){10}, 1, 0);
    tf_eager_release(g);
    tf_eager_release(y2);
    tf_eager_release(y);
    tf_eager_release(c);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* A no-grad scope applies to its runtime only. */
static void test_no_grad_per_runtime(void **state)
{
    (void)state;
    tft_env f = tft_env_begin(), h = tft_env_begin();
    tf_eager *x = tft_f64(f.rt, 1, 0, NULL, (double[]){2}, 1);
    tf_eager *z = tft_f64(h.rt, 1, 0, NULL, (double[]){2}, 1);
    tf_scope ng;
    TF_ASSERT_OK(tf_scope_begin_no_grad(f.rt, &ng));
    tf_eager *a = op2(tf_session_mul, f.s, x, x), *b = op2(tf_session_mul, h.s, z, z);
    tf_scope_end(&ng);
    assert_false(tf_eager_tracks_grad(a));
    assert_true(tf_eager_tracks_grad(b));
    tf_eager *g = grad(h.rt, b, z);
    expect(g, (double[]){4}, 1, 0);
    tf_eager_release(g);
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(x);
    tf_eager_release(z);
    tft_env_end(&h);
    tft_env_end(&f);
}

typedef struct thread_arg {
    tf_runtime *rt;
    tf_eager *x;  /* a variable of rt */
    tf_eager *c;  /* a constant of rt */
    int tracked;  /* out: did x * x track on this thread */
    int captured; /* out: was c * c recorded on this thread */
    int scoped;   /* open a no-grad scope on this thread around it */
} thread_arg;

static void *other_thread(void *p)
{
    thread_arg *a = p;
    tf_engine *e = NULL;
    if (tf_engine_open("cpu", 1, &e))
        return NULL;
    tf_session *s = NULL;
    tf_scope ng;
    if (tf_session_begin(a->rt, e, &s) == TF_OK) {
        if (a->scoped)
            tf_scope_begin_no_grad(a->rt, &ng);
        tf_eager *y = NULL, *cc = NULL, *r = NULL;
        if (tf_session_mul(s, a->x, a->x, &y) == TF_OK)
            a->tracked = tf_eager_tracks_grad(y);
        if (tf_session_mul(s, a->c, a->c, &cc) == TF_OK &&
            tf_runtime_grad_optional(a->rt, e, cc, a->c, &r) == TF_OK)
            a->captured = r != NULL;
        if (a->scoped)
            tf_scope_end(&ng);
        tf_eager_release(r);
        tf_eager_release(cc);
        tf_eager_release(y);
        tf_session_end(s);
    }
    tf_engine_destroy(e);
    return NULL;
}

/* Scopes belong to the thread that opened them. */
static void test_scopes_per_thread(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_eager *x = tft_f64(f.rt, 1, 0, NULL, (double[]){2}, 1);
    tf_eager *c = tft_f64(f.rt, 0, 0, NULL, (double[]){3}, 1);
    /* no-grad and capture here; the other thread records normally */
    tf_scope ng, cap;
    TF_ASSERT_OK(tf_scope_begin_capture_trace(f.rt, &cap));
    TF_ASSERT_OK(tf_scope_begin_no_grad(f.rt, &ng));
    thread_arg a = {f.rt, x, c, -1, -1, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, other_thread, &a), 0);
    pthread_join(th, NULL);
    assert_int_equal(a.tracked, 1);
    assert_int_equal(a.captured, 0); /* this thread's capture does not apply there */
    tf_eager *y = op2(tf_session_mul, f.s, x, x);
    assert_false(tf_eager_tracks_grad(y));
    tf_eager_release(y);
    tf_scope_end(&ng);
    tf_scope_end(&cap);
    /* a no-grad scope on the other thread does not stop recording here */
    a = (thread_arg){f.rt, x, c, -1, -1, 1};
    assert_int_equal(pthread_create(&th, NULL, other_thread, &a), 0);
    pthread_join(th, NULL);
    assert_int_equal(a.tracked, 0);
    y = op2(tf_session_mul, f.s, x, x);
    assert_true(tf_eager_tracks_grad(y));
    tf_eager_release(y);
    tf_eager_release(c);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* Trace capture records ops on constants for the functional forms only. */
static void test_trace_capture(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s3[] = {3};
    tf_eager *c = tft_f64(f.rt, 0, 1, s3, (double[]){1, 2, 3}, 3);
    tf_eager *v = tft_f64(f.rt, 1, 1, s3, (double[]){4, 5, 6}, 3);
    tf_scope cap;
    TF_ASSERT_OK(tf_scope_begin_capture_trace(f.rt, &cap));
    tf_eager *cc = op2(tf_session_mul, f.s, c, c), *l = sum_all(f.s, cc);
    tf_eager *w = op2(tf_session_mul, f.s, v, v); /* a variable's graph, not used by l */
    tf_scope_end(&cap);
    assert_false(tf_eager_tracks_grad(cc));
    assert_false(tf_eager_tracks_grad(l));
    tf_eager *g = grad(f.rt, l, c);
    expect(g, (double[]){2, 4, 6}, 3, 0);
    tf_eager_release(g);
    /* grad with respect to the captured intermediate */
    g = grad(f.rt, l, cc);
    expect(g, (double[]){1, 1, 1}, 3, 0);
    tf_eager_release(g);
    /* jvp and vjp work on the captured trace too */
    tf_eager *t = tft_f64(f.rt, 0, 1, s3, (double[]){1, 0, -1}, 3), *j = NULL;
    TF_ASSERT_OK(tf_runtime_jvp(f.rt, g_cpu, cc, c, t, &j));
    expect(j, (double[]){2, 0, -6}, 3, 0);
    tf_eager_release(j);
    /* backward accumulates nothing: l is not tracked */
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    expect_slot(v, NULL, 0);
    /* the same op outside the scope is not recorded */
    tf_eager *cc2 = op2(tf_session_mul, f.s, c, c), *r = (tf_eager *)0x1;
    TF_ASSERT_OK(tf_runtime_jvp_optional(f.rt, g_cpu, cc2, c, t, &r));
    assert_null(r);
    tf_eager_release(cc2);
    tf_eager_release(t);
    tf_eager_release(w);
    tf_eager_release(l);
    tf_eager_release(cc);
    tf_eager_release(v);
    tf_eager_release(c);
    tft_env_end(&f);
}

/* The scopes' older names begin the same scopes. */
static void test_scope_older_names(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s2[] = {2};
    tf_eager *x = tft_f64(f.rt, 1, 1, s2, (double[]){3, 4}, 2);
    tf_eager *c = tft_f64(f.rt, 0, 1, s2, (double[]){1, 2}, 2);
    tf_scope ng, cap;
    TF_ASSERT_OK(tf_runtime_no_grad(f.rt, &ng));
    tf_eager *y = op2(tf_session_mul, f.s, x, x);
    tf_scope_end(&ng);
    assert_false(tf_eager_tracks_grad(y));
    TF_ASSERT_OK(tf_runtime_capture_trace(f.rt, &cap));
    tf_eager *cc = op2(tf_session_mul, f.s, c, c), *l = sum_all(f.s, cc);
    tf_scope_end(&cap);
    tf_eager *g = grad(f.rt, l, c);
    expect(g, (double[]){2, 4}, 2, 0);
    assert_int_equal(tf_runtime_no_grad(NULL, &ng), TF_ERR_VALIDATION);
    tf_eager_release(g);
    tf_eager_release(l);
    tf_eager_release(cc);
    tf_eager_release(y);
    tf_eager_release(c);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* Gradients with respect to a tracked intermediate (no capture needed). */
static void test_grad_wrt_intermediate(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s2[] = {2};
    tf_eager *x = tft_f64(f.rt, 1, 1, s2, (double[]){0.5, 2}, 2);
    tf_eager *y = op2(tf_session_mul, f.s, x, x), *sy = NULL;
    TF_ASSERT_OK(tf_session_sin(f.s, y, &sy));
    tf_eager *l = sum_all(f.s, sy), *g = grad(f.rt, l, y);
    expect(g, (double[]){cos(0.25), cos(4.0)}, 2, 1e-15);
    tf_eager_release(g);
    g = grad(f.rt, l, x); /* the path through y continues to x */
    expect(g, (double[]){cos(0.25) * 1.0, cos(4.0) * 4.0}, 2, 1e-15);
    tf_eager_release(g);
    /* a grad wrt the intermediate stops there: x's own slot is untouched */
    expect_slot(x, NULL, 0);
    /* vjp wrt the intermediate */
    tf_eager *w = tft_f64(f.rt, 0, 1, s2, (double[]){2, 3}, 2), *r = NULL;
    TF_ASSERT_OK(tf_runtime_vjp(f.rt, g_cpu, sy, y, w, &r));
    expect(r, (double[]){2 * cos(0.25), 3 * cos(4.0)}, 2, 1e-15);
    tf_eager_release(r);
    /* the output itself: d l / d l = 1 */
    g = grad(f.rt, l, l);
    expect(g, (double[]){1}, 1, 0);
    tf_eager_release(g);
    tf_eager_release(w);
    tf_eager_release(l);
    tf_eager_release(sy);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&f);
}

static void test_backward_with_seed(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s23[] = {2, 3};
    tf_eager *x = tft_f64(f.rt, 1, 2, s23, (double[]){1, 2, 3, 4, 5, 6}, 6);
    tf_eager *y = op2(tf_session_mul, f.s, x, x);
    tf_eager *seed = tft_f64(f.rt, 0, 2, s23, (double[]){1, 0, -1, 0.5, 2, 0}, 6);
    TF_ASSERT_OK(tf_eager_backward_with_seed(y, seed, g_cpu));
    expect_slot(x, (double[]){2, 0, -6, 4, 20, 0}, 6);
    TF_ASSERT_OK(tf_eager_backward_with_seed(y, seed, g_cpu));
    expect_slot(x, (double[]){4, 0, -12, 8, 40, 0}, 6);
    /* a scalar output with seed 3 is three times backward() */
    TF_ASSERT_OK(tf_eager_clear_grad(x));
    tf_eager *l = sum_all(f.s, y), *three = tft_f64(f.rt, 0, 0, NULL, (double[]){3}, 1);
    TF_ASSERT_OK(tf_eager_backward_with_seed(l, three, g_cpu));
    expect_slot(x, (double[]){6, 12, 18, 24, 30, 36}, 6);
    tf_eager_release(three);
    tf_eager_release(l);
    tf_eager_release(seed);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&f);
}

/*
 * Backward adds a variable's cotangents into a sum it alone holds, in place
 * on engines that allow it (TF_ENGINE_CAP_IN_PLACE). Nothing the caller can
 * see may change: not the seed (the first contributions are the seed
 * itself), not a gradient returned earlier, not a vjp result.
 */
static void test_cotangent_sums_stay_private(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t s3[] = {3};
    const double seed_v[] = {1, -2, 0.5}, four[] = {4, -8, 2}, eight[] = {8, -16, 4};
    tf_eager *x = tft_f64(f.rt, 1, 1, s3, (double[]){1, 2, 3}, 3);
    /* the seed in engine memory (an op's result), as a sum of the engine could be */
    tf_eager *half = tft_f64(f.rt, 0, 1, s3, (double[]){0.5, -1, 0.25}, 3);
    tf_eager *seed = op2(tf_session_add, f.s, half, half);
    tf_eager_release(half);
    /* y3 = ((x + x) + x) + x: x's cotangent is seed + seed + seed + seed */
    tf_eager *y = op2(tf_session_add, f.s, x, x), *y2 = op2(tf_session_add, f.s, y, x);
    tf_eager *y3 = op2(tf_session_add, f.s, y2, x);
    TF_ASSERT_OK(tf_eager_backward_with_seed(y3, seed, g_cpu));
    expect(seed, seed_v, 3, 0);
    tf_tensor *g1 = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g1));
    expect_tensor(g1, four, 3, 0);
    TF_ASSERT_OK(tf_eager_backward_with_seed(y3, seed, g_cpu));
    expect_slot(x, eight, 3);
    expect_tensor(g1, four, 3, 0); /* the gradient read before is unchanged */
    expect(seed, seed_v, 3, 0);
    tf_tensor_release(g1);

    tf_eager *v1 = NULL, *v2 = NULL;
    TF_ASSERT_OK(tf_runtime_vjp(f.rt, g_cpu, y3, x, seed, &v1));
    expect(v1, four, 3, 0);
    TF_ASSERT_OK(tf_runtime_vjp(f.rt, g_cpu, y3, x, seed, &v2));
    expect(v1, four, 3, 0);
    expect(v2, four, 3, 0);
    expect(seed, seed_v, 3, 0);
    expect_slot(x, eight, 3); /* the functional form leaves the slot alone */
    tf_eager_release(v2);
    tf_eager_release(v1);
    tf_eager_release(y3);
    tf_eager_release(y2);
    tf_eager_release(y);
    tf_eager_release(seed);
    tf_eager_release(x);
    tft_env_end(&f);
}

/*
 * One cotangent handed to two inputs (an add's rule passes its cotangent on
 * to both): summing it into the first input's running cotangent must not
 * write over it while the second still reads it. The pattern is a cancelling
 * path, t1 = f(x); t2 = t1 + x; y = t1 - t2 = -x, on sizes below and above
 * the size from which the CPU engine's sessions defer (TF_DEFER_HOST_MIN_BYTES),
 * with f = exp, x * x and -x, and y written as t1 + (-t2) too. backward into
 * the slot, grad and vjp with a seed of ones must all give d sum(y)/dx = -1.
 */
typedef enum shared_f {
    SHARED_EXP,
    SHARED_SQUARE,
    SHARED_NEG
} shared_f;

static tf_eager *shared_program(tf_session *s, tf_eager *x, shared_f f, int plus_neg)
{
    tf_eager *t1 = NULL, *t2, *y = NULL, *loss;
    if (f == SHARED_EXP)
        TF_ASSERT_OK(tf_session_exp(s, x, &t1));
    else if (f == SHARED_SQUARE)
        t1 = op2(tf_session_mul, s, x, x);
    else
        TF_ASSERT_OK(tf_session_neg(s, x, &t1));
    t2 = op2(tf_session_add, s, t1, x);
    if (plus_neg) {
        tf_eager *n2 = NULL;
        TF_ASSERT_OK(tf_session_neg(s, t2, &n2));
        y = op2(tf_session_add, s, t1, n2);
        tf_eager_release(n2);
    } else {
        y = op2(tf_session_sub, s, t1, t2);
    }
    loss = sum_all(s, y);
    tf_eager_release(y);
    tf_eager_release(t2);
    tf_eager_release(t1);
    return loss;
}

static void expect_all(const tf_tensor *t, double want, size_t n, const char *what)
{
    double *got = malloc(n * sizeof *got);
    assert_non_null(got);
    read_tensor(t, got, n);
    for (size_t i = 0; i < n; i++)
        if (fabs(got[i] - want) > 1e-12) {
            double g = got[i];
            free(got);
            fail_msg("%s: element %zu is %.17g, want %g", what, i, g, want);
        }
    free(got);
}

static void test_shared_cotangent(void **state)
{
    (void)state;
    const size_t sizes[] = {3, 40000}; /* 40000 f64: 320 KB, deferred under AUTO */
    for (size_t si = 0; si < 2; si++)
        for (int f = SHARED_EXP; f <= SHARED_NEG; f++)
            for (int plus_neg = 0; plus_neg < 2; plus_neg++) {
                size_t n = sizes[si];
                tft_env e = tft_env_begin();
                double *v = malloc(n * sizeof *v);
                assert_non_null(v);
                for (size_t i = 0; i < n; i++)
                    v[i] = 0.3 - 0.5 * (double)(i % 3) / 2.0;
                const int64_t shape[] = {(int64_t)n};
                tf_eager *x = tft_f64(e.rt, 1, 1, shape, v, n);
                free(v);
                tf_eager *loss = shared_program(e.s, x, (shared_f)f, plus_neg);
                tf_eager *g = grad(e.rt, loss, x), *one = NULL, *vj = NULL;
                TF_ASSERT_OK(tf_session_full(e.s, TF_F64, 0, NULL, 1.0, &one));
                TF_ASSERT_OK(tf_runtime_vjp(e.rt, g_cpu, loss, x, one, &vj));
                TF_ASSERT_OK(tf_eager_backward(loss, g_cpu));
                tf_tensor *slot = NULL;
                TF_ASSERT_OK(tf_eager_grad(x, &slot));
                expect_all(tf_eager_value(g), -1.0, n, "grad");
                expect_all(tf_eager_value(vj), -1.0, n, "vjp");
                expect_all(slot, -1.0, n, "backward's slot");
                tf_tensor_release(slot);
                tf_eager_release(vj);
                tf_eager_release(one);
                tf_eager_release(g);
                tf_eager_release(loss);
                tf_eager_release(x);
                tft_env_end(&e);
            }
}

/*
 * A running cotangent that two inputs share (add's rule gave both the same
 * one) must not be written over by a fused rule summing into one of them:
 * u = exp(x); t = x + w; loss = sum(u * k2 + t * k). The rules of the sum and
 * of t * k leave t with k itself (times the seed of ones), t's rule gives
 * that to x and w, and exp's rule then adds into x's, which must become a
 * new tensor: d/dw = k, d/dx = k + k2 * exp(x), and k is unchanged.
 */
static void test_shared_running_cotangent(void **state)
{
    (void)state;
    const size_t sizes[] = {4, 40000};
    for (size_t si = 0; si < 2; si++) {
        size_t n = sizes[si];
        tft_env e = tft_env_begin();
        double *xv = malloc(n * sizeof *xv), *kv = malloc(n * sizeof *kv);
        double *k2v = malloc(n * sizeof *k2v), *got = malloc(n * sizeof *got);
        assert_true(xv && kv && k2v && got);
        for (size_t i = 0; i < n; i++) {
            xv[i] = 0.1 * (double)(i % 7) - 0.3;
            kv[i] = 1.0 + 0.5 * (double)(i % 3);
            k2v[i] = 2.0 - 0.25 * (double)(i % 5);
        }
        const int64_t shape[] = {(int64_t)n};
        tf_eager *x = tft_f64(e.rt, 1, 1, shape, xv, n), *w = tft_f64(e.rt, 1, 1, shape, xv, n);
        tf_eager *k = tft_f64(e.rt, 0, 1, shape, kv, n), *u = NULL;
        tf_eager *k2 = tft_f64(e.rt, 0, 1, shape, k2v, n);
        TF_ASSERT_OK(tf_session_exp(e.s, x, &u));
        tf_eager *t = op2(tf_session_add, e.s, x, w), *uk = op2(tf_session_mul, e.s, u, k2);
        tf_eager *tk = op2(tf_session_mul, e.s, t, k), *v = op2(tf_session_add, e.s, uk, tk);
        tf_eager *loss = sum_all(e.s, v);
        TF_ASSERT_OK(tf_eager_backward(loss, g_cpu));
        read_tensor(tf_eager_value(k), got, n);
        for (size_t i = 0; i < n; i++)
            if (got[i] != kv[i])
                fail_msg("n = %zu: the constant k changed at %zu", n, i);
        tf_tensor *gx = NULL, *gw = NULL;
        TF_ASSERT_OK(tf_eager_grad(x, &gx));
        TF_ASSERT_OK(tf_eager_grad(w, &gw));
        read_tensor(gw, got, n);
        for (size_t i = 0; i < n; i++)
            if (got[i] != kv[i])
                fail_msg("n = %zu: d/dw[%zu] = %.17g, want %.17g", n, i, got[i], kv[i]);
        read_tensor(gx, got, n);
        for (size_t i = 0; i < n; i++) {
            double want = kv[i] + k2v[i] * exp(xv[i]);
            if (fabs(got[i] - want) > 1e-14 * fabs(want))
                fail_msg("n = %zu: d/dx[%zu] = %.17g, want %.17g", n, i, got[i], want);
        }
        tf_tensor_release(gw);
        tf_tensor_release(gx);
        tf_eager *all[] = {loss, v, tk, uk, t, u, k2, k, w, x};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            tf_eager_release(all[i]);
        free(got);
        free(k2v);
        free(kv);
        free(xv);
        tft_env_end(&e);
    }
}

/* Asserts t holds exactly want[0 .. n) (any n, unlike expect_tensor). */
static void expect_exact(const tf_tensor *t, const double *want, size_t n)
{
    double *got = malloc(n * sizeof *got);
    assert_non_null(got);
    read_tensor(t, got, n);
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            double g = got[i];
            free(got);
            fail_msg("element %zu: got %.17g, want %.17g", i, g, want[i]);
        }
    free(got);
}

/*
 * Cotangent sums of every layout: contributions that are transposed views
 * and broadcasts, on a tensor large enough for the engine's vector and
 * threaded paths. Exact in f64 (small integers).
 */
static void test_cotangent_sums_of_views(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    enum {
        R = 40,
        C = 75,
        N = R * C
    };
    const int64_t shape[] = {R, C}, tshape[] = {C, R};
    static double xv[N], wv[N], tv[N], want[N];
    for (int i = 0; i < N; i++) {
        xv[i] = i % 7 - 3;
        wv[i] = i % 5 - 2;
    }
    for (int r = 0; r < R; r++) /* tv is C x R column-major: element (c, r) */
        for (int c = 0; c < C; c++)
            tv[c + C * r] = (r + 2 * c) % 9 - 4;
    tf_eager *x = tft_f64(f.rt, 1, 2, shape, xv, N);
    tf_eager *w = tft_f64(f.rt, 0, 2, shape, wv, N);
    tf_eager *wt = tft_f64(f.rt, 0, 2, tshape, tv, N);
    tf_eager *xt = NULL;
    TF_ASSERT_OK(tf_session_transpose(f.s, x, (int[]){1, 0}, &xt));
    /* l = sum(x * w) + sum(x^T * wt) + sum(x) + sum(x * w): d l / d x = 2w + wt^T + 1 */
    tf_eager *xw = op2(tf_session_mul, f.s, x, w), *xtwt = op2(tf_session_mul, f.s, xt, wt);
    tf_eager *a = sum_all(f.s, xw), *b = sum_all(f.s, xtwt), *c = sum_all(f.s, x);
    tf_eager *ab = op2(tf_session_add, f.s, a, b), *abc = op2(tf_session_add, f.s, ab, c);
    tf_eager *l = op2(tf_session_add, f.s, abc, a);
    for (int r = 0; r < R; r++)
        for (int col = 0; col < C; col++)
            want[r + R * col] = 2 * wv[r + R * col] + tv[col + C * r] + 1;
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    tf_tensor *slot = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &slot));
    expect_exact(slot, want, N);
    tf_eager *g = grad(f.rt, l, x);
    expect_exact(tf_eager_value(g), want, N);
    expect_exact(slot, want, N);
    tf_tensor_release(slot);
    tf_eager *rel[] = {g, l, abc, ab, c, b, a, xtwt, xw, xt, wt, w, x};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++)
        tf_eager_release(rel[i]);
    tft_env_end(&f);
}

/* ===================================================================== */
/* Detach                                                                 */
/* ===================================================================== */

static void test_detach(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    const int64_t k2[] = {2};
    tf_eager *x = tft_f64(f.rt, 1, 1, k2, (double[]){3, -1}, 2), *d = NULL;
    TF_ASSERT_OK(tf_eager_detach(x, &d));
    assert_false(tf_eager_tracks_grad(d));
    assert_true(tf_eager_same_context(d, x));
    assert_true(tf_tensor_shares_storage(tf_eager_value(d), tf_eager_value(x)));
    expect(d, (double[]){3, -1}, 2, 0);
    /* the detached copy stops the gradient: d(sum(d * x))/dx = d */
    tf_eager *dx = op2(tf_session_mul, f.s, d, x), *l = sum_all(f.s, dx);
    tf_eager *g = grad(f.rt, l, x);
    expect(g, (double[]){3, -1}, 2, 0);
    tf_eager_release(g);
    /* detaching a recorded intermediate cuts the graph there */
    tf_eager *xx = op2(tf_session_mul, f.s, x, x), *dd = NULL;
    TF_ASSERT_OK(tf_eager_detach(xx, &dd));
    tf_eager *ld = sum_all(f.s, dd), *r = (tf_eager *)0x1;
    TF_ASSERT_OK(tf_runtime_grad_optional(f.rt, g_cpu, ld, x, &r));
    assert_null(r);
    tf_eager_release(ld);
    tf_eager_release(dd);
    tf_eager_release(xx);

    /* detach_into: a copy owned by the other runtime, usable there */
    tf_runtime *rt2;
    TF_ASSERT_OK(tf_runtime_create(&rt2));
    tf_eager *m = NULL;
    TF_ASSERT_OK(tf_eager_detach_into(x, rt2, &m));
    assert_true(tf_eager_context_id(m) == tf_runtime_id(rt2));
    assert_false(tf_eager_same_context(m, x));
    assert_false(tf_eager_tracks_grad(m));
    assert_false(tf_tensor_shares_storage(tf_eager_value(m), tf_eager_value(x)));
    expect(m, (double[]){3, -1}, 2, 0);
    tf_session *s2;
    TF_ASSERT_OK(tf_session_begin(rt2, g_cpu, &s2));
    tf_eager *z = tft_f64(rt2, 1, 1, k2, (double[]){2, 5}, 2);
    tf_eager *mz = op2(tf_session_mul, s2, m, z), *l2 = sum_all(s2, mz);
    TF_ASSERT_OK(tf_eager_backward(l2, g_cpu));
    expect_slot(z, (double[]){3, -1}, 2);
    expect_slot(x, NULL, 0); /* nothing flows back to the source runtime */
    tf_eager_release(l2);
    tf_eager_release(mz);
    tf_eager_release(z);
    tf_session_end(s2);
    tf_eager_release(m);
    tf_runtime_release(rt2);

    tf_eager_release(l);
    tf_eager_release(dx);
    tf_eager_release(d);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* ===================================================================== */
/* Long chains                                                            */
/* ===================================================================== */

#define CHAIN 100000

/* 100000 recorded ops: backward walks them and release frees them without
   recursion (a recursive free would overflow the stack). */
static void test_long_chain(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_eager *x = tft_f64(f.rt, 1, 0, NULL, (double[]){1.5}, 1);
    tf_eager *one = tft_f64(f.rt, 0, 0, NULL, (double[]){1}, 1);
    tf_eager *y = x;
    tf_eager_retain(y);
    for (int i = 0; i < CHAIN; i++) {
        tf_eager *next = op2(tf_session_add, f.s, y, one);
        tf_eager_release(y);
        y = next;
    }
    expect(y, (double[]){1.5 + CHAIN}, 1, 0);
    assert_true(tf_eager_tracks_grad(y));
    TF_ASSERT_OK(tf_eager_backward(y, g_cpu));
    expect_slot(x, (double[]){1}, 1);
    tf_eager *g = grad(f.rt, y, x);
    expect(g, (double[]){1}, 1, 0);
    tf_eager_release(g);
    tf_eager_release(y); /* frees the whole chain */
    expect_slot(x, (double[]){1}, 1);
    /* a chain whose root variable the caller no longer holds */
    tf_eager *z = tft_f64(f.rt, 1, 0, NULL, (double[]){0}, 1);
    for (int i = 0; i < CHAIN; i++) {
        tf_eager *next = op2(tf_session_add, f.s, z, one);
        tf_eager_release(z);
        z = next;
    }
    tf_eager_release(z);
    tf_eager_release(one);
    tf_eager_release(x);
    tft_env_end(&f);
}

/* Derivatives come back dense (readable as one slice) even where a rule
   produced a view: backward(sum(x)) broadcasts a scalar cotangent. */
static void test_derivatives_are_dense(void **state)
{
    (void)state;
    tf_runtime *rt;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    double v[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    tf_tensor *t;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 2, shape, v, 6, &t));
    tf_eager *x, *loss, *g, *j, *tan;
    TF_ASSERT_OK(tf_runtime_variable_from(rt, t, &x));
    TF_ASSERT_OK(tf_runtime_constant_from(rt, t, &tan));
    tf_tensor_release(t);
    tf_session *s;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    TF_ASSERT_OK(tf_session_reduce_sum(s, x, NULL, 0, &loss));
    tf_session_end(s);
    TF_ASSERT_OK(tf_eager_backward(loss, g_cpu));
    TF_ASSERT_OK(tf_runtime_grad(rt, g_cpu, loss, x, &g));
    TF_ASSERT_OK(tf_runtime_jvp(rt, g_cpu, loss, x, tan, &j));
    tf_tensor *slot;
    TF_ASSERT_OK(tf_eager_grad(x, &slot));
    const tf_tensor *all[2] = {slot, tf_eager_value(g)};
    for (int k = 0; k < 2; k++) {
        const void *d;
        size_t n;
        TF_ASSERT_OK(tf_tensor_data(all[k], TF_F64, &d, &n));
        assert_int_equal(n, 6);
        for (size_t i = 0; i < n; i++)
            assert_true(((const double *)d)[i] == 1.0);
    }
    double jv;
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(j), TF_F64, &jv, 1));
    assert_true(jv == 21.0);
    tf_tensor_release(slot);
    tf_eager_release(j);
    tf_eager_release(g);
    tf_eager_release(loss);
    tf_eager_release(tan);
    tf_eager_release(x);
    tf_runtime_release(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_second_derivative_cube),
        cmocka_unit_test(test_hessian_vector_product),
        cmocka_unit_test(test_hessian_gradcheck),
        cmocka_unit_test(test_backward_accumulates),
        cmocka_unit_test(test_backward_reachability),
        cmocka_unit_test(test_functional_grad_leaves_slots),
        cmocka_unit_test(test_no_grad_records_nothing),
        cmocka_unit_test(test_nested_no_grad),
        cmocka_unit_test(test_no_grad_per_runtime),
        cmocka_unit_test(test_scopes_per_thread),
        cmocka_unit_test(test_trace_capture),
        cmocka_unit_test(test_scope_older_names),
        cmocka_unit_test(test_grad_wrt_intermediate),
        cmocka_unit_test(test_backward_with_seed),
        cmocka_unit_test(test_cotangent_sums_stay_private),
        cmocka_unit_test(test_cotangent_sums_of_views),
        cmocka_unit_test(test_shared_cotangent),
        cmocka_unit_test(test_shared_running_cotangent),
        cmocka_unit_test(test_detach),
        cmocka_unit_test(test_long_chain),
        cmocka_unit_test(test_derivatives_are_dense),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
