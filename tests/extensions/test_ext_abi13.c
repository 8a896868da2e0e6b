/*
 * test_ext_abi13.c - extension ABI 1.3 (the forward's outputs for
 * first-order rules) through its fixture (fixtures/fixture_abi13.c, op
 * powers(x) -> (x^2, x^3) whose kernel counts its calls): backward runs the
 * kernel no second time, also after the application released the outputs;
 * grad of grad (recorded) recomputes and is right against finite
 * differences in f64; a module stating 1.2 is unaffected (its rules
 * recompute). Loss throughout: l = sum(w * q) + sum(p), so
 * dl/dx = 3 w x^2 + 2 x.
 */
#include <dlfcn.h>
#include <math.h>
#include <string.h>

#include "ext_test_util.h"

#define N 6
static const int64_t k_shape[2] = {2, 3};
static const double k_x[N] = {0.5, -1.25, 2.0, 0.75, -0.3, 1.1};
static const double k_w[N] = {1.0, 0.5, -2.0, 1.5, 3.0, -0.25};

static tf_extension_module *g_new, *g_old;
static long *g_new_calls, *g_old_calls;

static long *kernel_calls(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD); /* loaded already: the same object */
    if (!h)
        return NULL;
    long *c = dlsym(h, "fx13_kernel_calls");
    dlclose(h); /* drops this handle's count only: the host keeps the module */
    return c;
}

static int setup(void **state)
{
    if (tft_cpu_setup(state) || tf_extension_load(FX_PATH("abi13"), &g_new) ||
        tf_extension_load(FX_PATH("abi13_old"), &g_old))
        return -1;
    g_new_calls = kernel_calls(FX_PATH("abi13"));
    g_old_calls = kernel_calls(FX_PATH("abi13_old"));
    return g_new_calls && g_old_calls && g_new_calls != g_old_calls ? 0 : -1;
}

static void install(tf_runtime *rt, tf_extension_module *m)
{
    tf_epoch e;
    TF_ASSERT_OK(tf_runtime_install_extension_module(rt, m, &e));
}

/* l(x) for x (var or not); p and q released before it returns. */
static tf_eager *loss(tft_env *env, const char *op, tf_eager *x)
{
    tf_eager *pq[2] = {NULL, NULL}, *w = ext_tensor(env->rt, 2, k_shape, k_w, 0), *wq, *a, *b, *l;
    const tf_call_arg arg = TF_ARG_TENSOR(x);
    TF_ASSERT_OK(tf_session_call(env->s, op, &arg, 1, pq, 2));
    TF_ASSERT_OK(tf_session_mul(env->s, w, pq[1], &wq));
    TF_ASSERT_OK(tf_session_reduce_sum(env->s, wq, NULL, 0, &a));
    TF_ASSERT_OK(tf_session_reduce_sum(env->s, pq[0], NULL, 0, &b));
    TF_ASSERT_OK(tf_session_add(env->s, a, b, &l));
    tf_eager *dead[6] = {pq[0], pq[1], w, wq, a, b};
    for (int i = 0; i < 6; i++)
        tf_eager_release(dead[i]);
    return l;
}

static double loss_at(tft_env *env, const char *op, const double *xv)
{
    tf_eager *x = ext_tensor(env->rt, 2, k_shape, xv, 0), *l = loss(env, op, x);
    double v;
    ext_read(l, &v, 1);
    tf_eager_release(l);
    tf_eager_release(x);
    return v;
}

/* The gradient against 3 w x^2 + 2 x and against central differences of l. */
static void check_grad(tft_env *env, const char *op, const double *g)
{
    for (int i = 0; i < N; i++) {
        assert_true(fabs(g[i] - (3 * k_w[i] * k_x[i] * k_x[i] + 2 * k_x[i])) < 1e-12);
        double xp[N], xm[N], h = 1e-6;
        memcpy(xp, k_x, sizeof xp);
        memcpy(xm, k_x, sizeof xm);
        xp[i] += h;
        xm[i] -= h;
        double fd = (loss_at(env, op, xp) - loss_at(env, op, xm)) / (2 * h);
        assert_true(fabs(g[i] - fd) < 1e-6 * (1 + fabs(fd)));
    }
}

/* backward of l with the outputs released first; kernel calls: forward and backward. */
static void backward_counts(const char *op, tf_extension_module *m, const long *calls,
                            long want_in_backward)
{
    tft_env env = tft_env_begin();
    install(env.rt, m);
    tf_eager *x = ext_tensor(env.rt, 2, k_shape, k_x, 1);
    long before = *calls;
    tf_eager *l = loss(&env, op, x);
    assert_int_equal(*calls, before + 1);
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    assert_int_equal(*calls, before + 1 + want_in_backward);
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    double gv[N];
    TF_ASSERT_OK(tf_tensor_copy_to_host(g, TF_F64, gv, N));
    tf_tensor_release(g);
    check_grad(&env, op, gv);
    tf_eager_release(l);
    tf_eager_release(x);
    tft_env_end(&env);
}

static void test_backward_reads_the_forward_outputs(void **state)
{
    (void)state;
    backward_counts("tenferro.fx_abi13.powers", g_new, g_new_calls, 0);
}

static void test_abi12_module_recomputes(void **state)
{
    (void)state; /* the flag of a module stating 1.2 is not read: q's rule recomputes p */
    backward_counts("tenferro.fx_abi13_old.powers", g_old, g_old_calls, 1);
}

/* g = dl/dx recorded (tf_runtime_grad while recording), at xv. */
static void first_grad(tft_env *env, const double *xv, double *g, tf_eager **keep_x,
                       tf_eager **keep_g)
{
    tf_eager *x = ext_tensor(env->rt, 2, k_shape, xv, 1), *l = loss(env, "tenferro.fx_abi13.powers", x);
    tf_eager *ge = NULL;
    TF_ASSERT_OK(tf_runtime_grad(env->rt, g_cpu, l, x, &ge));
    ext_read(ge, g, N);
    tf_eager_release(l);
    if (keep_x) {
        *keep_x = x;
        *keep_g = ge;
        return;
    }
    tf_eager_release(ge);
    tf_eager_release(x);
}

static void test_grad_of_grad_recomputes(void **state)
{
    (void)state;
    tft_env env = tft_env_begin();
    install(env.rt, g_new);
    static const double v[N] = {0.3, -1.0, 0.7, 2.0, -0.4, 1.2};
    long before = *g_new_calls;
    double g[N];
    tf_eager *x, *ge;
    first_grad(&env, k_x, g, &x, &ge);
    /* forward, and q's rule recomputing p: a recorded derivative gets no outputs */
    assert_int_equal(*g_new_calls, before + 2);
    for (int i = 0; i < N; i++)
        assert_true(fabs(g[i] - (3 * k_w[i] * k_x[i] * k_x[i] + 2 * k_x[i])) < 1e-12);
    tf_eager *ve = ext_tensor(env.rt, 2, k_shape, v, 0), *gv, *h, *hh;
    TF_ASSERT_OK(tf_session_mul(env.s, ge, ve, &gv));
    TF_ASSERT_OK(tf_session_reduce_sum(env.s, gv, NULL, 0, &h));
    TF_ASSERT_OK(tf_runtime_grad(env.rt, g_cpu, h, x, &hh));
    double hv[N];
    ext_read(hh, hv, N);
    for (int i = 0; i < N; i++) { /* d/dx_i sum(v g) = 6 w x v + 2 v, and by differences */
        assert_true(fabs(hv[i] - (6 * k_w[i] * k_x[i] * v[i] + 2 * v[i])) < 1e-12);
        double xp[N], xm[N], gp[N], gm[N], sp = 0, sm = 0, step = 1e-6;
        memcpy(xp, k_x, sizeof xp);
        memcpy(xm, k_x, sizeof xm);
        xp[i] += step;
        xm[i] -= step;
        first_grad(&env, xp, gp, NULL, NULL);
        first_grad(&env, xm, gm, NULL, NULL);
        for (int j = 0; j < N; j++) {
            sp += v[j] * gp[j];
            sm += v[j] * gm[j];
        }
        double fd = (sp - sm) / (2 * step);
        assert_true(fabs(hv[i] - fd) < 1e-6 * (1 + fabs(fd)));
    }
    tf_eager *dead[6] = {x, ge, ve, gv, h, hh};
    for (int i = 0; i < 6; i++)
        tf_eager_release(dead[i]);
    tft_env_end(&env);
}

/* An untracked call keeps nothing and its values are right. */
static void test_untracked_call(void **state)
{
    (void)state;
    tft_env env = tft_env_begin();
    install(env.rt, g_new);
    assert_true(fabs(loss_at(&env, "tenferro.fx_abi13.powers", k_x) -
                     (k_w[0] * 0.125 + 0.25 + k_w[1] * -1.953125 + 1.5625 + k_w[2] * 8 + 4 +
                      k_w[3] * 0.421875 + 0.5625 + k_w[4] * -0.027 + 0.09 + k_w[5] * 1.331 +
                      1.21)) < 1e-12);
    tft_env_end(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backward_reads_the_forward_outputs),
        cmocka_unit_test(test_abi12_module_recomputes),
        cmocka_unit_test(test_grad_of_grad_recomputes),
        cmocka_unit_test(test_untracked_call),
    };
    return cmocka_run_group_tests(tests, setup, tft_cpu_teardown);
}
