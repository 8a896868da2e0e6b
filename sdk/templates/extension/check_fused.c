/*
 * check_fused.c - checks the example.fused module from an application.
 *
 *   check_fused [ENGINE]
 *
 * Opens ENGINE, or without it the configured engine (tf_engine_open_configured:
 * TENFERRO_ENGINE, the configuration file, else "cpu"), loads the module by
 * name from the plugin search path (tenferro-ext-example.so), installs it
 * into a runtime and checks, in f64, swish's value, its gradient (reverse
 * mode), its forward derivative and a second derivative against the closed
 * forms, on a dense and on a transposed (strided) input; then its value in
 * f32, and that an integer input is refused. Prints "check_fused: ok on
 * engine NAME" and exits 0, or names the first mismatch and exits 1.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tenferro/extension.h>
#include <tenferro/ops.h>
#include <tenferro/tenferro.h>

#define N 6
static const int64_t shape[2] = {2, 3};
static const double xs[N] = {-6.0, -1.5, -0.25, 0.0, 0.75, 4.0};

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

static double swish(double x)
{
    return x * sigmoid(x);
}

static double swish_d1(double x) /* s (1 + x (1 - s)) */
{
    double s = sigmoid(x);
    return s * (1.0 + x * (1.0 - s));
}

static double swish_d2(double x) /* s (1 - s) (2 + x (1 - 2 s)) */
{
    double s = sigmoid(x);
    return s * (1.0 - s) * (2.0 + x * (1.0 - 2.0 * s));
}

static int failed(const char *what)
{
    fprintf(stderr, "check_fused: %s: %s: %s (%s)\n", what, tf_status_name(tf_error_status()),
            tf_error_message(), tf_error_cause());
    return 1;
}

/* Compares the f64 values of t with want[i] (in column-major order). */
static int expect(const char *what, const tf_eager *t, const double *want, double tol)
{
    double got[N];
    if (tf_tensor_copy_to_host(tf_eager_value(t), TF_F64, got, N) != TF_OK)
        return failed(what);
    for (int i = 0; i < N; i++) {
        if (fabs(got[i] - want[i]) > tol * (1.0 + fabs(want[i]))) {
            fprintf(stderr, "check_fused: %s: element %d is %.17g, expected %.17g\n", what, i,
                    got[i], want[i]);
            return 1;
        }
    }
    return 0;
}

static int call_swish(tf_session *s, tf_eager *x, tf_eager **y)
{
    tf_call_arg arg = TF_ARG_TENSOR(x);
    return tf_session_call(s, "example.fused.swish", &arg, 1, y, 1) != TF_OK;
}

/* Value, gradient, forward derivative and second derivative, all in f64. */
static int check_f64(tf_runtime *rt, tf_engine *engine, tf_session *s)
{
    double want[N], cot[N], grad[N], tangent[N], jvp[N], d2[N], one[N];
    for (int i = 0; i < N; i++) {
        want[i] = swish(xs[i]);
        cot[i] = 0.5 + i;
        grad[i] = cot[i] * swish_d1(xs[i]);
        tangent[i] = 1.0 - 0.25 * i;
        jvp[i] = tangent[i] * swish_d1(xs[i]);
        d2[i] = swish_d2(xs[i]);
        one[i] = 1.0;
    }
    tf_tensor *tx = NULL, *tc = NULL, *tt = NULL, *to = NULL;
    tf_eager *x = NULL, *c = NULL, *t = NULL, *ones = NULL;
    tf_eager *y = NULL, *g = NULL, *j = NULL, *g1 = NULL, *g2 = NULL;
    int bad = tf_tensor_from_host(TF_F64, 2, shape, xs, N, &tx) ||
              tf_tensor_from_host(TF_F64, 2, shape, cot, N, &tc) ||
              tf_tensor_from_host(TF_F64, 2, shape, tangent, N, &tt) ||
              tf_tensor_from_host(TF_F64, 2, shape, one, N, &to) ||
              tf_runtime_variable_from(rt, tx, &x) || tf_runtime_constant_from(rt, tc, &c) ||
              tf_runtime_constant_from(rt, tt, &t) || tf_runtime_constant_from(rt, to, &ones);
    if (bad)
        bad = failed("making the inputs");
    if (!bad && call_swish(s, x, &y))
        bad = failed("swish(x)");
    if (!bad)
        bad = expect("swish(x)", y, want, 1e-14);
    if (!bad && tf_runtime_vjp(rt, engine, y, x, c, &g))
        bad = failed("vjp of swish");
    if (!bad)
        bad = expect("vjp of swish", g, grad, 1e-14);
    if (!bad && tf_runtime_jvp(rt, engine, y, x, t, &j))
        bad = failed("jvp of swish");
    if (!bad)
        bad = expect("jvp of swish", j, jvp, 1e-14);
    /* The vjp with a cotangent of ones is swish'(x) elementwise, and it is
       tracked (the rules' own ops are recorded), so its vjp with ones again
       is swish''(x): grad of grad through the module's rules. */
    if (!bad && (tf_runtime_vjp(rt, engine, y, x, ones, &g1) ||
                 tf_runtime_vjp(rt, engine, g1, x, ones, &g2)))
        bad = failed("second derivative of swish");
    if (!bad)
        bad = expect("second derivative of swish", g2, d2, 1e-13);
    tf_eager *all[] = {x, c, t, ones, y, g, j, g1, g2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    tf_tensor_release(tx);
    tf_tensor_release(tc);
    tf_tensor_release(tt);
    tf_tensor_release(to);
    return bad;
}

/* A transposed view (strides 3, 1) goes to the kernel as it is. */
static int check_strided(tf_runtime *rt, tf_session *s)
{
    static const int64_t tshape[2] = {3, 2};
    static const int perm[2] = {1, 0};
    double want[N];
    for (int r = 0; r < 2; r++) /* element (i, j) of x^T is x[j, i] */
        for (int col = 0; col < 3; col++)
            want[col + 3 * r] = swish(xs[r + 2 * col]);
    tf_tensor *tx = NULL, *view = NULL;
    tf_eager *x = NULL, *y = NULL;
    int bad = tf_tensor_from_host(TF_F64, 2, shape, xs, N, &tx) ||
              tf_tensor_transpose(tx, perm, &view) || tf_runtime_constant_from(rt, view, &x);
    if (bad)
        bad = failed("making the strided input");
    if (!bad && tf_tensor_shape(view)[0] != tshape[0])
        bad = failed("transposing");
    if (!bad && call_swish(s, x, &y))
        bad = failed("swish(x^T)");
    if (!bad)
        bad = expect("swish(x^T)", y, want, 1e-14);
    tf_eager_release(x);
    tf_eager_release(y);
    tf_tensor_release(view);
    tf_tensor_release(tx);
    return bad;
}

/* f32 values, and an i32 input refused by the op's inference. */
static int check_dtypes(tf_runtime *rt, tf_session *s)
{
    float xf[N];
    int32_t xi[N] = {0};
    for (int i = 0; i < N; i++)
        xf[i] = (float)xs[i];
    tf_tensor *tf32 = NULL, *ti32 = NULL;
    tf_eager *x = NULL, *xi_e = NULL, *y = NULL, *none = NULL;
    int bad = tf_tensor_from_host(TF_F32, 2, shape, xf, N, &tf32) ||
              tf_tensor_from_host(TF_I32, 2, shape, xi, N, &ti32) ||
              tf_runtime_constant_from(rt, tf32, &x) || tf_runtime_constant_from(rt, ti32, &xi_e);
    if (bad)
        bad = failed("making the f32/i32 inputs");
    if (!bad && call_swish(s, x, &y))
        bad = failed("swish(x) in f32");
    if (!bad) {
        float got[N];
        if (tf_tensor_copy_to_host(tf_eager_value(y), TF_F32, got, N) != TF_OK)
            bad = failed("reading the f32 result");
        for (int i = 0; !bad && i < N; i++)
            if (fabs(got[i] - swish(xs[i])) > 1e-6 * (1.0 + fabs(swish(xs[i])))) {
                fprintf(stderr, "check_fused: f32 element %d is %.9g, expected %.9g\n", i,
                        (double)got[i], swish(xs[i]));
                bad = 1;
            }
    }
    if (!bad) {
        tf_call_arg arg = TF_ARG_TENSOR(xi_e);
        tf_status st = tf_session_call(s, "example.fused.swish", &arg, 1, &none, 1);
        if (st != TF_ERR_DTYPE_MISMATCH || none != NULL) {
            fprintf(stderr, "check_fused: an i32 input gave %s, expected TF_ERR_DTYPE_MISMATCH\n",
                    tf_status_name(st));
            bad = 1;
        }
    }
    tf_eager_release(x);
    tf_eager_release(xi_e);
    tf_eager_release(y);
    tf_eager_release(none);
    tf_tensor_release(tf32);
    tf_tensor_release(ti32);
    return bad;
}

int main(int argc, char **argv)
{
    tf_engine *engine = NULL;
    tf_runtime *rt = NULL;
    tf_session *s = NULL;
    tf_extension_module *module = NULL;
    tf_epoch epoch;
    if (argc > 2) {
        fprintf(stderr, "usage: check_fused [ENGINE]\n");
        return 2;
    }
    if (argc == 2) {
        if (tf_engine_open(argv[1], 1, &engine) != TF_OK)
            return failed("opening the engine");
    } else {
        char *report = NULL;
        tf_status st = tf_engine_open_configured(&engine, &report);
        tf_config_report_free(report);
        if (st != TF_OK)
            return failed("opening the configured engine");
    }
    int bad = tf_runtime_create(&rt) != TF_OK || tf_session_begin(rt, engine, &s) != TF_OK;
    if (bad)
        bad = failed("creating the runtime");
    if (!bad && tf_extension_load("example", &module) != TF_OK)
        bad = failed("loading tenferro-ext-example.so");
    if (!bad && tf_runtime_install_extension_module(rt, module, &epoch) != TF_OK)
        bad = failed("installing example.fused");
    if (!bad)
        bad = check_f64(rt, engine, s) || check_strided(rt, s) || check_dtypes(rt, s);
    if (!bad)
        printf("check_fused: ok on engine %s\n", tf_engine_name(engine));
    tf_session_end(s);
    tf_runtime_release(rt);
    tf_engine_destroy(engine);
    return bad;
}
