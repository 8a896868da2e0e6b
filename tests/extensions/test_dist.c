/*
 * test_dist.c - the tenferro.dist module's collectives, run by ctest under
 * `mpirun -np 2` and `-np 4`: their values on every dtype and layout, both
 * AD modes checked against finite differences of the distributed function,
 * a second derivative in closed form, and the refusals (mismatched calls
 * across ranks, bad arguments).
 *
 * The program initialises MPI itself (so the module uses the application's
 * MPI) and uses it directly for what the check needs outside tenferro: the
 * sum over ranks of the loss in the finite differences.
 *
 * Finite differences across ranks: for a function y_r = f(x_0 .. x_{p-1})
 * whose rank r part is computed on rank r, the reverse check perturbs one
 * element of one rank's input at a time (every rank evaluates), forms the
 * global loss L = sum_r <w_r, y_r> with MPI_Allreduce and compares
 * (L(+h) - L(-h)) / 2h with that rank's VJP; the forward check moves every
 * rank's input along its tangent at once and compares each rank's
 * difference quotient with its JVP.
 */
#include <math.h>
#include <mpi.h>

#include <tenferro/extension.h>

#include "tf_eager_test.h"

static int g_rank, g_size;
static tf_extension_module *g_dist;

static int setup(void **state)
{
    if (tft_cpu_setup(state) != 0)
        return -1;
    return tf_extension_load("dist", &g_dist) == TF_OK ? 0 : -1;
}

/* A runtime with the module installed, and a session of it. */
static tft_env env(void)
{
    tft_env e = tft_env_begin();
    tf_epoch epoch;
    TF_ASSERT_OK(tf_runtime_install_extension_module(e.rt, g_dist, &epoch));
    MPI_Barrier(MPI_COMM_WORLD); /* a failed test elsewhere must not run ahead */
    return e;
}

#define NO_ARG INT64_MIN

/* op(x) or op(x, i) (i != NO_ARG): the module's op by its short name. */
static tf_status dist(tf_session *s, const char *op, tf_eager *x, int64_t i, tf_eager **out)
{
    char name[64];
    snprintf(name, sizeof name, "tenferro.dist.%s", op);
    tf_call_arg args[2] = {TF_ARG_TENSOR(x), TF_ARG_I64(i)};
    return tf_session_call(s, name, args, i != NO_ARG ? 2 : 1, out, 1);
}

static void read_f64(const tf_eager *x, double *out, size_t n)
{
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(x), TF_F64, out, n));
}

/* ---- values ---- */

static void test_world(void **state)
{
    (void)state;
    tft_env e = env();
    tf_eager *w = NULL;
    TF_ASSERT_OK(tf_session_call(e.s, "tenferro.dist.world", NULL, 0, &w, 1));
    int64_t ws[2];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(w), TF_I64, ws, 2));
    assert_int_equal(ws[0], g_rank);
    assert_int_equal(ws[1], g_size);
    tf_eager_release(w);
    tft_env_end(&e);
}

/* x_r, element k = 100 r + k + 0.5, of shape [2, 3], as dtype. */
static tf_eager *rank_data(tf_runtime *rt, tf_dtype dtype, size_t rank, const int64_t *shape)
{
    double v[64];
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    for (size_t k = 0; k < n; k++)
        v[k] = 100.0 * g_rank + (double)k + (dtype == TF_F64 || dtype == TF_F32 ? 0.5 : 0);
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, rank, shape, v, n, &t));
    tf_eager *x = NULL, *y = NULL;
    TF_ASSERT_OK(tf_runtime_constant_from(rt, t, &x));
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    TF_ASSERT_OK(tf_session_cast(s, x, dtype, &y));
    tf_session_end(s);
    tf_eager_release(x);
    tf_tensor_release(t);
    return y;
}

static void test_all_reduce_and_rooted_values(void **state)
{
    (void)state;
    tft_env e = env();
    const int64_t shape[2] = {2, 3};
    double p = g_size, got[6];
    static const tf_dtype dtypes[] = {TF_F64, TF_F32, TF_I32, TF_I64};
    for (size_t d = 0; d < 4; d++) {
        double frac = d < 2 ? 0.5 : 0;
        tf_eager *x = rank_data(e.rt, dtypes[d], 2, shape), *y = NULL, *y64 = NULL;
        TF_ASSERT_OK(dist(e.s, "all_reduce", x, 0, &y));
        TF_ASSERT_OK(tf_session_cast(e.s, y, TF_F64, &y64));
        read_f64(y64, got, 6);
        for (int k = 0; k < 6; k++)
            assert_true(got[k] == 50.0 * p * (p - 1) + p * (k + frac));
        tf_eager_release(y);
        tf_eager_release(y64);
        TF_ASSERT_OK(dist(e.s, "broadcast", x, g_size - 1, &y));
        TF_ASSERT_OK(tf_session_cast(e.s, y, TF_F64, &y64));
        read_f64(y64, got, 6);
        for (int k = 0; k < 6; k++)
            assert_true(got[k] == 100.0 * (g_size - 1) + k + frac);
        tf_eager_release(y);
        tf_eager_release(y64);
        tf_eager_release(x);
    }
    tf_eager *x = rank_data(e.rt, TF_F64, 2, shape), *y = NULL;
    TF_ASSERT_OK(dist(e.s, "all_reduce", x, 1, &y)); /* mean */
    read_f64(y, got, 6);
    for (int k = 0; k < 6; k++)
        assert_true(got[k] == (50.0 * p * (p - 1) + p * (k + 0.5)) / p);
    tf_eager_release(y);
    TF_ASSERT_OK(dist(e.s, "reduce", x, 0, &y));
    read_f64(y, got, 6);
    for (int k = 0; k < 6; k++)
        assert_true(got[k] == (g_rank == 0 ? 50.0 * p * (p - 1) + p * (k + 0.5) : 0.0));
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&e);
}

static void test_gather_scatter_values_and_layouts(void **state)
{
    (void)state;
    tft_env e = env();
    int p = g_size;
    const int64_t shape[2] = {2, 3};
    tf_eager *x = rank_data(e.rt, TF_F64, 2, shape), *y = NULL;
    TF_ASSERT_OK(dist(e.s, "all_gather", x, NO_ARG, &y));
    tft_expect_shape(y, 2, (const int64_t[]){2, 3 * p});
    double got[64];
    read_f64(y, got, (size_t)(6 * p));
    for (int r = 0; r < p; r++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) /* (i, 3r + j) is x_r (i, j) */
                assert_true(got[i + 2 * (3 * r + j)] == 100.0 * r + (i + 2 * j) + 0.5);
    tf_eager_release(y);
    tf_eager_release(x);
    /* reduce_scatter of [2, 2p]: rank r gets block r of the sum */
    x = rank_data(e.rt, TF_F64, 2, (const int64_t[]){2, 2 * p});
    TF_ASSERT_OK(dist(e.s, "reduce_scatter", x, NO_ARG, &y));
    tft_expect_shape(y, 2, (const int64_t[]){2, 2});
    read_f64(y, got, 4);
    for (int k = 0; k < 4; k++) {
        double want = 0;
        for (int s = 0; s < p; s++)
            want += 100.0 * s + (4 * g_rank + k) + 0.5;
        assert_true(got[k] == want);
    }
    tf_eager_release(y);
    /* a strided input (a transposed view) reduces like its dense copy */
    tf_eager *t = NULL, *yt = NULL;
    TF_ASSERT_OK(tf_session_transpose(e.s, x, (const int[]){1, 0}, &t));
    TF_ASSERT_OK(dist(e.s, "all_reduce", t, 0, &yt));
    read_f64(yt, got, (size_t)(4 * p));
    for (int j = 0; j < 2 * p; j++)
        for (int i = 0; i < 2; i++)
            assert_true(got[j + 2 * p * i] ==
                        50.0 * p * (p - 1) + p * ((double)(i + 2 * j) + 0.5));
    tf_eager_release(t);
    tf_eager_release(yt);
    tf_eager_release(x);
    /* empty tensors and scalars take part like any other */
    tf_eager *empty = NULL, *sc = NULL;
    TF_ASSERT_OK(tf_session_full(e.s, TF_F64, 1, (const int64_t[]){0}, 0, &empty));
    TF_ASSERT_OK(dist(e.s, "all_reduce", empty, 0, &y));
    tft_expect_shape(y, 1, (const int64_t[]){0});
    tf_eager_release(y);
    TF_ASSERT_OK(tf_session_scalar(e.s, TF_F64, g_rank + 1.0, &sc));
    TF_ASSERT_OK(dist(e.s, "all_reduce", sc, 0, &y));
    read_f64(y, got, 1);
    assert_true(got[0] == p * (p + 1) / 2.0);
    tf_eager_release(y);
    tf_eager_release(sc);
    tf_eager_release(empty);
    tft_env_end(&e);
}

/* ---- derivatives ---- */

/* The functions checked: y = post(op(pre(x), arg), x) with a collective in the middle. */
typedef enum pre_fn { PRE_SIN, PRE_SQUARE, PRE_NONE } pre_fn;
typedef enum post_fn { POST_MUL_X, POST_ADD_X, POST_EXP, POST_SIN, POST_TANH, POST_NONE } post_fn;

typedef struct dfn {
    pre_fn pre;
    const char *op;
    int64_t arg; /* NO_ARG, or the reduction or root (-1: the last rank) */
    post_fn post;
} dfn;

static tf_status run_fn(tf_session *s, const dfn *f, tf_eager *x, tf_eager **y)
{
    tf_eager *a = NULL, *b = NULL;
    tf_status st = f->pre == PRE_SIN      ? tf_session_sin(s, x, &a)
                   : f->pre == PRE_SQUARE ? tf_session_mul(s, x, x, &a)
                                          : (tf_eager_retain(x), a = x, TF_OK);
    if (!st)
        st = dist(s, f->op, a, f->arg == -1 ? g_size - 1 : f->arg, f->post == POST_NONE ? y : &b);
    if (!st && f->post != POST_NONE) {
        switch (f->post) {
        case POST_MUL_X: st = tf_session_mul(s, x, b, y); break;
        case POST_ADD_X: st = tf_session_add(s, x, b, y); break;
        case POST_EXP: st = tf_session_exp(s, b, y); break;
        case POST_SIN: st = tf_session_sin(s, b, y); break;
        default: st = tf_session_tanh(s, b, y); break;
        }
    }
    tf_eager_release(a);
    tf_eager_release(b);
    return st;
}

/* Inputs of a check: this rank's values, and a direction (cotangent or tangent). */
static void fill(double *v, size_t n, double scale, int salt)
{
    for (size_t k = 0; k < n; k++)
        v[k] = scale * sin(0.7 * (double)k + 1.3 * g_rank + salt) + 0.1;
}

/* y = f(x) on this rank for host values x (f64 [2, c]), into out (ny values). */
static void eval(tf_runtime *rt, const dfn *f, const double *x, int64_t c, double *out, size_t ny)
{
    tf_eager *xe = tft_f64(rt, 0, 2, (const int64_t[]){2, c}, x, (size_t)(2 * c)), *y = NULL;
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    TF_ASSERT_OK(run_fn(s, f, xe, &y));
    tf_session_end(s);
    read_f64(y, out, ny);
    tf_eager_release(y);
    tf_eager_release(xe);
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t k = 0; k < n; k++)
        s += a[k] * b[k];
    return s;
}

/* Reverse and forward mode of f at x [2, c] with outputs of ny elements, against differences. */
static void check(const char *what, dfn f, int64_t c, size_t ny)
{
    tft_env e = env();
    size_t n = (size_t)(2 * c);
    double x[64], w[64], v[64], xbar[64], ydot[64], yp[64], ym[64];
    fill(x, n, 0.8, 0);
    fill(w, ny, 1.0, 1);
    fill(v, n, 1.0, 2);
    tf_eager *xv = tft_f64(e.rt, 1, 2, (const int64_t[]){2, c}, x, n), *y = NULL;
    TF_ASSERT_OK(run_fn(e.s, &f, xv, &y));
    tf_eager *we = tft_f64(e.rt, 0, tf_tensor_rank(tf_eager_value(y)),
                           tf_tensor_shape(tf_eager_value(y)), w, ny);
    tf_eager *ve = tft_f64(e.rt, 0, 2, (const int64_t[]){2, c}, v, n), *g = NULL, *t = NULL;
    TF_ASSERT_OK(tf_runtime_vjp(e.rt, g_cpu, y, xv, we, &g));
    TF_ASSERT_OK(tf_runtime_jvp(e.rt, g_cpu, y, xv, ve, &t));
    read_f64(g, xbar, n);
    read_f64(t, ydot, ny);
    const double h = 1e-6;
    for (int q = 0; q < g_size; q++) {
        for (size_t k = 0; k < n; k++) {
            double xs[64], l[2], L[2];
            for (int sgn = 0; sgn < 2; sgn++) {
                memcpy(xs, x, n * sizeof *x);
                if (g_rank == q)
                    xs[k] += sgn ? -h : h;
                eval(e.rt, &f, xs, c, yp, ny);
                l[sgn] = dot(w, yp, ny);
            }
            MPI_Allreduce(l, L, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            double fd = (L[0] - L[1]) / (2 * h);
            if (g_rank == q && fabs(fd - xbar[k]) > 1e-6 * fmax(1, fabs(fd)))
                fail_msg("%s: vjp of rank %d element %zu: %.12g, differences %.12g", what, q, k,
                         xbar[k], fd);
        }
    }
    double xs[64];
    for (size_t k = 0; k < n; k++)
        xs[k] = x[k] + h * v[k];
    eval(e.rt, &f, xs, c, yp, ny);
    for (size_t k = 0; k < n; k++)
        xs[k] = x[k] - h * v[k];
    eval(e.rt, &f, xs, c, ym, ny);
    for (size_t k = 0; k < ny; k++) {
        double fd = (yp[k] - ym[k]) / (2 * h);
        if (fabs(fd - ydot[k]) > 1e-6 * fmax(1, fabs(fd)))
            fail_msg("%s: jvp element %zu on rank %d: %.12g, differences %.12g", what, k,
                     g_rank, ydot[k], fd);
    }
    tf_eager *all[] = {xv, y, we, ve, g, t};
    for (size_t i = 0; i < 6; i++)
        tf_eager_release(all[i]);
    tft_env_end(&e);
}

static void test_derivatives_against_differences(void **state)
{
    (void)state;
    size_t p = (size_t)g_size;
    /* x_r * sum_s sin(x_s); exp(mean_s x_s^2); x + x_last^2; sin(sum on rank 0) ... */
    check("all_reduce(sum)", (dfn){PRE_SIN, "all_reduce", 0, POST_MUL_X}, 3, 6);
    check("all_reduce(mean)", (dfn){PRE_SQUARE, "all_reduce", 1, POST_EXP}, 3, 6);
    check("broadcast", (dfn){PRE_SQUARE, "broadcast", -1, POST_ADD_X}, 3, 6);
    check("reduce", (dfn){PRE_NONE, "reduce", 0, POST_SIN}, 3, 6);
    check("all_gather", (dfn){PRE_SQUARE, "all_gather", NO_ARG, POST_TANH}, 3, 6 * p);
    check("reduce_scatter", (dfn){PRE_SQUARE, "reduce_scatter", NO_ARG, POST_NONE}, 2 * g_size,
          4);
}

/* l = sum(all_reduce(x)^2) / 2: grad = p sum_s x_s, and grad of sum(grad) = p^2. */
static void test_second_derivative(void **state)
{
    (void)state;
    tft_env e = env();
    double x[3] = {g_rank + 1.0, 2.0 * g_rank, -1.0}, got[3];
    tf_eager *xv = tft_f64(e.rt, 1, 1, (const int64_t[]){3}, x, 3), *a = NULL, *sq = NULL;
    tf_eager *half = NULL, *lh = NULL, *g = NULL, *sg = NULL, *g2 = NULL;
    TF_ASSERT_OK(dist(e.s, "all_reduce", xv, 0, &a));
    TF_ASSERT_OK(tf_session_reduce_sum_squares(e.s, a, NULL, 0, &sq));
    TF_ASSERT_OK(tf_session_scalar(e.s, TF_F64, 0.5, &half));
    TF_ASSERT_OK(tf_session_mul(e.s, sq, half, &lh));
    TF_ASSERT_OK(tf_runtime_grad(e.rt, g_cpu, lh, xv, &g));
    read_f64(g, got, 3);
    double p = g_size, sums[3] = {p * (p + 1) / 2, p * (p - 1), -p};
    for (int k = 0; k < 3; k++)
        assert_true(got[k] == p * sums[k]);
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, g, NULL, 0, &sg));
    TF_ASSERT_OK(tf_runtime_grad(e.rt, g_cpu, sg, xv, &g2));
    read_f64(g2, got, 3);
    for (int k = 0; k < 3; k++)
        assert_true(got[k] == p * p);
    tf_eager *all[] = {xv, a, sq, half, lh, g, sg, g2};
    for (size_t i = 0; i < 8; i++)
        tf_eager_release(all[i]);
    tft_env_end(&e);
}

/* ---- refusals ---- */

static void expect_kind(tf_status st, const char *kind)
{
    const char *module = NULL, *k = NULL;
    if (st != TF_ERR_EXTENSION)
        fail_msg("got %s (%s), expected TF_ERR_EXTENSION %s", tf_status_name(st),
                 tf_error_message(), kind);
    assert_true(tf_error_extension_kind(&module, &k, NULL));
    assert_string_equal(module, "tenferro.dist");
    assert_string_equal(k, kind);
}

static void test_mismatched_calls_are_refused(void **state)
{
    (void)state;
    if (g_size == 1)
        skip(); /* one rank always agrees with itself */
    tft_env e = env();
    /* rank 0 brings [3], the others [4]: every rank gets `mismatch`, nothing hangs */
    tf_eager *x = NULL, *y = NULL;
    TF_ASSERT_OK(tf_session_full(e.s, TF_F64, 1, (const int64_t[]){g_rank ? 4 : 3}, 1, &x));
    y = TFT_SENTINEL;
    expect_kind(dist(e.s, "all_reduce", x, 0, &y), "mismatch");
    assert_ptr_equal(y, TFT_SENTINEL);
    /* different collectives, and different roots */
    expect_kind(dist(e.s, g_rank ? "broadcast" : "reduce", x, 0, &y), "mismatch");
    tf_eager_release(x);
    TF_ASSERT_OK(tf_session_full(e.s, TF_F64, 1, (const int64_t[]){4}, 1, &x));
    expect_kind(dist(e.s, "broadcast", x, g_rank ? 0 : g_size - 1, &y), "mismatch");
    /* the connection is intact: the next agreeing call works */
    TF_ASSERT_OK(dist(e.s, "all_reduce", x, 0, &y));
    double got[4];
    read_f64(y, got, 4);
    assert_true(got[0] == g_size);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&e);
}

static void test_bad_arguments_are_refused(void **state)
{
    (void)state;
    tft_env e = env();
    tf_eager *x = NULL, *y = NULL, *b = NULL, *odd = NULL, *sc = NULL;
    TF_ASSERT_OK(tf_session_full(e.s, TF_F64, 1, (const int64_t[]){4}, 1, &x));
    TFT_EXPECT_FAIL(dist(e.s, "all_reduce", x, 2, &y), TF_ERR_VALIDATION, "op", y);
    TFT_EXPECT_FAIL(dist(e.s, "broadcast", x, g_size, &y), TF_ERR_VALIDATION, "root", y);
    TFT_EXPECT_FAIL(dist(e.s, "reduce", x, -1, &y), TF_ERR_VALIDATION, "root", y);
    TF_ASSERT_OK(tf_session_compare(e.s, x, x, TF_COMPARE_EQ, &b));
    TFT_EXPECT_FAIL(dist(e.s, "all_reduce", b, 0, &y), TF_ERR_DTYPE_MISMATCH, "x", y);
    tf_eager *ints = NULL;
    TF_ASSERT_OK(tf_session_cast(e.s, x, TF_I32, &ints));
    TFT_EXPECT_FAIL(dist(e.s, "all_reduce", ints, 1, &y), TF_ERR_DTYPE_MISMATCH, "x", y);
    TF_ASSERT_OK(tf_session_full(e.s, TF_F64, 1, (const int64_t[]){g_size + 1}, 1, &odd));
    if (g_size > 1)
        TFT_EXPECT_FAIL(dist(e.s, "reduce_scatter", odd, NO_ARG, &y), TF_ERR_SHAPE_MISMATCH, "x",
                        y);
    TF_ASSERT_OK(tf_session_scalar(e.s, TF_F64, 1, &sc));
    TFT_EXPECT_FAIL(dist(e.s, "all_gather", sc, NO_ARG, &y), TF_ERR_SHAPE_MISMATCH, "x", y);
    tf_eager *all[] = {x, b, ints, odd, sc};
    for (size_t i = 0; i < 5; i++)
        tf_eager_release(all[i]);
    tft_env_end(&e);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_world),
        cmocka_unit_test(test_all_reduce_and_rooted_values),
        cmocka_unit_test(test_gather_scatter_values_and_layouts),
        cmocka_unit_test(test_derivatives_against_differences),
        cmocka_unit_test(test_second_derivative),
        cmocka_unit_test(test_mismatched_calls_are_refused),
        cmocka_unit_test(test_bad_arguments_are_refused),
    };
    int failed = cmocka_run_group_tests(tests, setup, tft_cpu_teardown);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}
