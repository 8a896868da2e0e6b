/*
 * test_cpu_threads.c - the threaded CPU engine (threads = 4) against the
 * serial one (threads = 1) and a reference on inputs of 2^18 to 2^20 elements, big
 * enough that the work is split: elementwise, reductions over each axis and
 * all axes, transposing and strided copies, fill, a contraction; and errors
 * found by worker threads reaching the calling thread.
 */
#include <math.h>

#include "tf_ref.h"

static tf_engine *serial, *threaded;
static tf_engine **const engines[] = {&serial, &threaded};

static int open_engines(void **state)
{
    (void)state;
    return tfr_engines_open("cpu", (const int[]){1, 4}, engines, 2);
}

static int close_engines(void **state)
{
    (void)state;
    return tfr_engines_destroy(engines, 2);
}

#define SIDE 1024 /* SIDE * SIDE = 2^20 elements: 4 pieces of a cheap op (CPU_GRAIN_CHEAP) */

/* Runs the same primitive on both engines; returns both outputs' values. */
static void run_both(const char *what, tf_prim prim, const void *params, size_t n_in,
                     tf_tensor *const *in, tf_dtype dtype, size_t rank, const int64_t *shape,
                     tf_scalar **got_serial, tf_scalar **got_threaded)
{
    tf_tensor *out1 = tfr_output(serial, dtype, rank, shape);
    tf_tensor *out4 = tfr_output(threaded, dtype, rank, shape);
    tfr_exec_ok(what, serial, prim, params, n_in, in, 1, &out1);
    tfr_exec_ok(what, threaded, prim, params, n_in, in, 1, &out4);
    *got_serial = tfr_read(out1);
    *got_threaded = tfr_read(out4);
    tf_tensor_release(out1);
    tf_tensor_release(out4);
}

/* Checks threaded == serial within rounding and both against `want`. */
static void agree(const char *what, tf_dtype dtype, size_t n, const tf_scalar *s,
                  const tf_scalar *t, const tf_scalar *want, const double *extra)
{
    tfr_check(what, dtype, n, t, s, extra, tfr_tol_default(dtype));
    if (want) {
        tfr_check(what, dtype, n, s, want, extra, tfr_tol_default(dtype));
        tfr_check(what, dtype, n, t, want, extra, tfr_tol_default(dtype));
    }
}

static void test_threads_elementwise(void **state)
{
    (void)state;
    int64_t shape[2] = {SIDE, SIDE};
    size_t n = (size_t)SIDE * SIDE;
    tfr_rng rng;
    tfr_rng_seed(&rng, 601);
    tfr_gen g = {TFR_UNIFORM, -3.0, 3.0};
    tfr_input a, b;
    tfr_input_make(&a, &rng, serial, TF_F32, 2, shape, TFR_TRANSPOSED, &g);
    tfr_input_make(&b, &rng, serial, TF_F32, 2, shape, TFR_BROADCAST, &g);
    tf_scalar *s, *t, *want = tfr_vals_alloc(n);

    tf_unary_params up = {sizeof up, TF_UNARY_EXP};
    run_both("exp f32 of a transposed input", TF_PRIM_UNARY, &up, 1, &a.t, TF_F32, 2, shape, &s,
             &t);
    for (size_t i = 0; i < n; i++)
        want[i] = tfr_norm(TF_F32, tfr_f(exp(a.vals[i].f)));
    agree("exp f32", TF_F32, n, s, t, want, NULL);
    free(s);
    free(t);

    tf_binary_params bp = {sizeof bp, TF_BINARY_MUL};
    tf_tensor *ab[2] = {a.t, b.t};
    run_both("mul f32 with a broadcast operand", TF_PRIM_BINARY, &bp, 2, ab, TF_F32, 2, shape, &s,
             &t);
    for (size_t i = 0; i < n; i++)
        want[i] = tfr_norm(TF_F32, tfr_f(a.vals[i].f * b.vals[i].f));
    agree("mul f32", TF_F32, n, s, t, want, NULL);
    free(s);
    free(t);

    tf_compare_params cp = {sizeof cp, TF_COMPARE_LT};
    run_both("lt f32", TF_PRIM_COMPARE, &cp, 2, ab, TF_BOOL, 2, shape, &s, &t);
    for (size_t i = 0; i < n; i++)
        want[i] = tfr_i(a.vals[i].f < b.vals[i].f);
    agree("lt f32", TF_BOOL, n, s, t, want, NULL);
    free(s);
    free(t);

    tf_convert_params vp = {sizeof vp, 0};
    run_both("convert f32 -> i32", TF_PRIM_CONVERT, &vp, 1, &a.t, TF_I32, 2, shape, &s, &t);
    for (size_t i = 0; i < n; i++)
        want[i] = tfr_i((int64_t)trunc(a.vals[i].f));
    agree("convert f32 -> i32", TF_I32, n, s, t, want, NULL);
    free(s);
    free(t);
    free(want);
    tfr_input_free(&a);
    tfr_input_free(&b);
}

/* sin(x) ^ y in f64 over a reversed input, and SELECT between the two. */
static void test_threads_elementwise_f64(void **state)
{
    (void)state;
    int64_t shape[3] = {64, 64, 64};
    size_t n = (size_t)1 << 18;
    tfr_rng rng;
    tfr_rng_seed(&rng, 602);
    tfr_gen pos = {TFR_UNIFORM, 0.1, 3.0};
    tfr_input a, b, m;
    tfr_input_make(&a, &rng, serial, TF_F64, 3, shape, TFR_REVERSED, &pos);
    tfr_input_make(&b, &rng, serial, TF_F64, 3, shape, TFR_UPLOADED, &pos);
    tfr_input_make(&m, &rng, serial, TF_BOOL, 3, shape, TFR_MIXED, &pos);
    tf_scalar *s, *t, *want = tfr_vals_alloc(n);
    tf_binary_params bp = {sizeof bp, TF_BINARY_POW};
    tf_tensor *ab[2] = {a.t, b.t};
    run_both("pow f64", TF_PRIM_BINARY, &bp, 2, ab, TF_F64, 3, shape, &s, &t);
    for (size_t i = 0; i < n; i++)
        want[i] = tfr_f(pow(a.vals[i].f, b.vals[i].f));
    agree("pow f64", TF_F64, n, s, t, want, NULL);
    free(s);
    free(t);
    tf_tensor *mab[3] = {m.t, a.t, b.t};
    run_both("select f64", TF_PRIM_SELECT, NULL, 3, mab, TF_F64, 3, shape, &s, &t);
    for (size_t i = 0; i < n; i++)
        want[i] = m.vals[i].i ? a.vals[i] : b.vals[i];
    agree("select f64", TF_F64, n, s, t, want, NULL);
    free(s);
    free(t);
    free(want);
    tfr_input_free(&a);
    tfr_input_free(&b);
    tfr_input_free(&m);
}

/* Reference sums over the axes of mask of a [SIDE, SIDE] input, with rounding bounds. */
static void sum_ref(const tf_scalar *v, tf_dtype dtype, uint64_t mask, tf_scalar *want,
                    double *extra)
{
    size_t n_out = (mask == 3) ? 1 : SIDE;
    double u = dtype == TF_F32 ? 0x1p-24 : 0x1p-53;
    for (size_t o = 0; o < n_out; o++) {
        double sum = 0.0, mag = 0.0;
        uint64_t isum = 0;
        for (size_t r = 0; r < (mask == 3 ? (size_t)SIDE * SIDE : SIDE); r++) {
            size_t i = mask == 1 ? o * SIDE + r : mask == 2 ? o + r * SIDE : r;
            sum += v[i].f;
            mag += fabs(v[i].f);
            isum += (uint64_t)v[i].i;
        }
        want[o] = tf_dtype_is_float(dtype) ? tfr_norm(dtype, tfr_f(sum))
                                           : tfr_norm(dtype, tfr_i((int64_t)isum));
        extra[o] = 3.0 * (double)(mask == 3 ? SIDE * SIDE : SIDE) * u * mag;
    }
}

static void test_threads_reduce(void **state)
{
    (void)state;
    static const tf_dtype dtypes[] = {TF_F32, TF_F64, TF_I64};
    int64_t shape[2] = {SIDE, SIDE};
    tfr_rng rng;
    tfr_rng_seed(&rng, 603);
    for (size_t d = 0; d < 3; d++) {
        tfr_gen g =
            dtypes[d] == TF_I64 ? (tfr_gen){TFR_WIDE, 0, 0} : (tfr_gen){TFR_UNIFORM, -1.0, 1.0};
        tfr_input a;
        tfr_input_make(&a, &rng, serial, dtypes[d], 2, shape, d == 1 ? TFR_TRANSPOSED : TFR_DENSE,
                       &g);
        for (uint64_t mask = 1; mask <= 3; mask++) {
            int64_t oshape[2] = {mask & 1 ? 1 : SIDE, mask & 2 ? 1 : SIDE};
            size_t n_out = tfr_numel(2, oshape);
            tf_reduce_params p = {sizeof p, TF_REDUCE_SUM, mask};
            tf_scalar *s, *t, *want = tfr_vals_alloc(n_out);
            double *extra = calloc(n_out, sizeof *extra);
            assert_non_null(extra);
            char what[64];
            snprintf(what, sizeof what, "sum %s mask %llu", tf_dtype_name(dtypes[d]),
                     (unsigned long long)mask);
            run_both(what, TF_PRIM_REDUCE, &p, 1, &a.t, dtypes[d], 2, oshape, &s, &t);
            sum_ref(a.vals, dtypes[d], mask, want, extra);
            agree(what, dtypes[d], n_out, s, t, want, extra);
            free(s);
            free(t);
            free(want);
            free(extra);
        }
        tfr_input_free(&a);
    }
}

/* MAX over all 2^20 elements with one NaN deep inside: every thread's part matters. */
static void test_threads_reduce_max_nan(void **state)
{
    (void)state;
    int64_t shape[1] = {(int64_t)SIDE * SIDE}, one[1] = {1};
    size_t n = (size_t)SIDE * SIDE;
    tf_scalar *v = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++)
        v[i] = tfr_f((double)(i % 1000));
    v[n - 3] = tfr_f(NAN);
    v[n / 3] = tfr_f(5000.0);
    tf_tensor *in = tfr_host(TF_F32, 1, shape, v);
    tf_reduce_params p = {sizeof p, TF_REDUCE_MAX, 1};
    tf_scalar *s, *t, want = tfr_f(NAN);
    run_both("max f32 with a NaN", TF_PRIM_REDUCE, &p, 1, &in, TF_F32, 1, one, &s, &t);
    agree("max f32 with a NaN", TF_F32, 1, s, t, &want, NULL);
    free(s);
    free(t);
    v[n - 3] = tfr_f(1.0);
    tf_tensor_release(in);
    in = tfr_host(TF_F32, 1, shape, v);
    want = tfr_f(5000.0);
    run_both("max f32", TF_PRIM_REDUCE, &p, 1, &in, TF_F32, 1, one, &s, &t);
    agree("max f32", TF_F32, 1, s, t, &want, NULL);
    free(s);
    free(t);
    free(v);
    tf_tensor_release(in);
}

static void test_threads_copy(void **state)
{
    (void)state;
    int64_t shape[2] = {SIDE, SIDE};
    size_t n = (size_t)SIDE * SIDE;
    tfr_rng rng;
    tfr_rng_seed(&rng, 604);
    tfr_gen g = {TFR_WIDE, 0, 0};
    tfr_input a;
    tfr_input_make(&a, &rng, serial, TF_I32, 2, shape, TFR_TRANSPOSED, &g);
    tf_scalar *s, *t;
    run_both("copy of a transposed i32 input", TF_PRIM_COPY, NULL, 1, &a.t, TF_I32, 2, shape, &s,
             &t);
    agree("transposing copy", TF_I32, n, s, t, a.vals, NULL);
    free(s);
    free(t);
    /* into a reversed view, on the threaded engine */
    tf_tensor *root, *view;
    tfr_strided_output(&rng, threaded, TF_I32, 2, shape, TFR_OUT_REVERSED, &root, &view);
    tfr_exec_ok("copy into a reversed view", threaded, TF_PRIM_COPY, NULL, 1, &a.t, 1, &view);
    tfr_check_strided_write("copy into a reversed view", root, view, a.vals);
    tf_tensor_release(view);
    tf_tensor_release(root);
    /* fill of a stepped view: every other element of a larger tensor */
    tfr_strided_output(&rng, threaded, TF_F64, 2, shape, TFR_OUT_STEPPED, &root, &view);
    tf_fill_params fp = {sizeof fp, 0, {2.5, 0}, 0};
    tfr_exec_ok("fill a stepped view", threaded, TF_PRIM_FILL, &fp, 0, NULL, 1, &view);
    tf_scalar *vals = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++)
        vals[i] = tfr_f(2.5);
    tfr_check_strided_write("fill a stepped view", root, view, vals);
    free(vals);
    tf_tensor_release(view);
    tf_tensor_release(root);
    tfr_input_free(&a);
}

static void test_threads_dot(void **state)
{
    (void)state;
    int64_t ls[2] = {200, 150}, rs[2] = {150, 170}, os[2] = {200, 170};
    tfr_rng rng;
    tfr_rng_seed(&rng, 605);
    tfr_gen g = {TFR_UNIFORM, -1.0, 1.0};
    tfr_input a, b;
    tfr_input_make(&a, &rng, serial, TF_F64, 2, ls, TFR_DENSE, &g);
    tfr_input_make(&b, &rng, serial, TF_F64, 2, rs, TFR_TRANSPOSED, &g);
    tf_dot_general_params p = {sizeof p, 1, 0, 0, {1}, {0}, {0}, {0}, 0, 0};
    tf_tensor *ab[2] = {a.t, b.t};
    tf_scalar *s, *t, *want = tfr_vals_alloc(200 * 170);
    double *extra = calloc(200 * 170, sizeof *extra);
    assert_non_null(extra);
    run_both("matmul f64", TF_PRIM_DOT_GENERAL, &p, 2, ab, TF_F64, 2, os, &s, &t);
    for (int64_t j = 0; j < 170; j++) {
        for (int64_t i = 0; i < 200; i++) {
            double sum = 0.0, mag = 0.0;
            for (int64_t k = 0; k < 150; k++) {
                double x = a.vals[i + 200 * k].f * b.vals[k + 150 * j].f;
                sum += x;
                mag += fabs(x);
            }
            want[i + 200 * j] = tfr_f(sum);
            extra[i + 200 * j] = 3.0 * 151.0 * 0x1p-53 * mag;
        }
    }
    agree("matmul f64", TF_F64, 200 * 170, s, t, want, extra);
    free(s);
    free(t);
    free(want);
    free(extra);
    tfr_input_free(&a);
    tfr_input_free(&b);
}

/* An error found in one worker's part comes back on the calling thread. */
static void expect_engine_error(const char *what, tf_prim prim, const void *params, size_t n_in,
                                tf_tensor *const *in, tf_dtype dtype, size_t rank,
                                const int64_t *shape, tf_status expected)
{
    tf_tensor *out = tfr_output(threaded, dtype, rank, shape);
    tf_error_clear();
    tf_status st = tf_engine_execute(threaded, prim, params, n_in, in, 1, &out);
    if (st != expected)
        fail_msg("%s: got %s, want %s (%s)", what, tf_status_name(st), tf_status_name(expected),
                 tf_error_message());
    if (tf_error_status() != expected || tf_error_message()[0] == '\0')
        fail_msg("%s: the calling thread's error slot holds %s with message \"%s\"", what,
                 tf_status_name(tf_error_status()), tf_error_message());
    tf_tensor_release(out);
}

static void test_threads_errors(void **state)
{
    (void)state;
    int64_t shape[2] = {SIDE, SIDE};
    size_t n = (size_t)SIDE * SIDE;
    tf_scalar *v = tfr_vals_alloc(n), *w = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++) {
        v[i] = tfr_i((int64_t)i);
        w[i] = tfr_i(3);
    }
    w[n - 5] = tfr_i(0);
    tf_tensor *ab[2] = {tfr_host(TF_I32, 2, shape, v), tfr_host(TF_I32, 2, shape, w)};
    tf_binary_params bp = {sizeof bp, TF_BINARY_DIV};
    expect_engine_error("i32 division by zero near the end", TF_PRIM_BINARY, &bp, 2, ab, TF_I32, 2,
                        shape, TF_ERR_VALIDATION);
    /* a gather index out of range in the last quarter */
    int64_t ishape[1] = {SIDE};
    tf_scalar idx[SIDE];
    for (int i = 0; i < SIDE; i++)
        idx[i] = tfr_i(i);
    idx[SIDE - 7] = tfr_i(SIDE);
    tf_tensor *gi[2] = {ab[0], tfr_host(TF_I64, 1, ishape, idx)};
    tf_gather_params gp = {sizeof gp, 1, TF_GATHER_INDEX_SELECT, 0};
    expect_engine_error("gather index out of range", TF_PRIM_GATHER, &gp, 2, gi, TF_I32, 2, shape,
                        TF_ERR_OUT_OF_RANGE);
    /* a checked conversion that changes one value in the middle */
    tf_tensor *fl = NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = tfr_f((double)(i % 100));
    v[n / 2 + 11] = tfr_f(0.5);
    fl = tfr_host(TF_F64, 2, shape, v);
    tf_convert_params cp = {sizeof cp, 1};
    expect_engine_error("checked convert of 0.5 to i32", TF_PRIM_CONVERT, &cp, 1, &fl, TF_I32, 2,
                        shape, TF_ERR_OUT_OF_RANGE);
    tf_tensor_release(fl);
    tf_tensor_release(gi[1]);
    tf_tensor_release(ab[0]);
    tf_tensor_release(ab[1]);
    free(v);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_elementwise), cmocka_unit_test(test_threads_elementwise_f64),
        cmocka_unit_test(test_threads_reduce),      cmocka_unit_test(test_threads_reduce_max_nan),
        cmocka_unit_test(test_threads_copy),        cmocka_unit_test(test_threads_dot),
        cmocka_unit_test(test_threads_errors),
    };
    return cmocka_run_group_tests_name("cpu threaded vs serial", tests, open_engines,
                                       close_engines);
}
