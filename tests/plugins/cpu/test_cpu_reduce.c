/*
 * test_cpu_reduce.c - REDUCE (sum, prod, max, min over any axis set) of the
 * CPU engine against a reference loop: every dtype the header allows,
 * random shapes and axis masks (none, some, all), empty groups (identity),
 * NaN propagation, integer wrapping, inputs of every layout.
 */
#include <math.h>

#include "cpu_fixture.h"

static double unit_roundoff(tf_dtype dtype)
{
    return dtype == TF_F32 ? 0x1p-24 : 0x1p-53;
}

/* The identity of op for dtype (the value of an empty group). */
static tf_scalar identity(tf_dtype dtype, tf_reduce_op op)
{
    int is_float = tf_dtype_is_float(dtype);
    switch (op) {
    case TF_REDUCE_SUM: return is_float ? tfr_f(0.0) : tfr_i(0);
    case TF_REDUCE_PROD: return is_float ? tfr_f(1.0) : tfr_i(1);
    case TF_REDUCE_MAX: return is_float ? tfr_f(-INFINITY) : tfr_i(tfr_int_min(dtype));
    case TF_REDUCE_MIN: return is_float ? tfr_f(INFINITY) : tfr_i(tfr_int_max(dtype));
    default: break;
    }
    return tfr_i(0);
}

/* A running reduction; `mag` bounds the rounding of float SUM and PROD. */
typedef struct acc {
    tf_scalar v;
    double mag;
    int nan;
    size_t count;
} acc;

static void acc_add(acc *a, tf_dtype dtype, tf_reduce_op op, tf_scalar x)
{
    a->count++;
    if (!tf_dtype_is_float(dtype)) {
        uint64_t u = (uint64_t)a->v.i, w = (uint64_t)x.i;
        if (op == TF_REDUCE_SUM)
            a->v = tfr_norm(dtype, tfr_i((int64_t)(u + w)));
        else if (op == TF_REDUCE_PROD)
            a->v = tfr_norm(dtype, tfr_i((int64_t)(u * w)));
        else if (op == TF_REDUCE_MAX)
            a->v.i = x.i > a->v.i ? x.i : a->v.i;
        else
            a->v.i = x.i < a->v.i ? x.i : a->v.i;
        return;
    }
    a->nan |= isnan(x.f);
    if (op == TF_REDUCE_SUM) {
        a->v.f += x.f;
        a->mag += fabs(x.f);
    } else if (op == TF_REDUCE_PROD) {
        a->v.f *= x.f;
    } else if (op == TF_REDUCE_MAX) {
        a->v.f = x.f > a->v.f ? x.f : a->v.f;
    } else {
        a->v.f = x.f < a->v.f ? x.f : a->v.f;
    }
}

/* Expected value and allowed extra error of one output element. */
static tf_scalar acc_result(const acc *a, tf_dtype dtype, tf_reduce_op op, double *extra)
{
    *extra = 0.0;
    if (!tf_dtype_is_float(dtype))
        return a->v;
    if (a->nan && (op == TF_REDUCE_MAX || op == TF_REDUCE_MIN))
        return tfr_f(NAN);
    double u = unit_roundoff(dtype), k = (double)a->count + 1.0;
    if (op == TF_REDUCE_SUM)
        *extra = 3.0 * k * u * a->mag; /* any summation order */
    if (op == TF_REDUCE_PROD && isfinite(a->v.f))
        *extra = 3.0 * k * u * fabs(a->v.f);
    return tfr_norm(dtype, a->v);
}

/* want/extra over the output shape (extent 1 on the reduced axes). */
static void reduce_ref(tf_dtype dtype, tf_reduce_op op, const tfr_input *in, size_t rank,
                       const int64_t *shape, uint64_t mask, tf_scalar *want, double *extra)
{
    int64_t oshape[TF_MAX_RANK], gshape[TF_MAX_RANK], o[TF_MAX_RANK] = {0};
    for (size_t k = 0; k < rank; k++) {
        int reduced = (mask >> k) & 1u;
        oshape[k] = reduced ? 1 : shape[k];
        gshape[k] = reduced ? shape[k] : 1;
    }
    size_t n_out = tfr_numel(rank, oshape), n_group = tfr_numel(rank, gshape);
    for (size_t i = 0; i < n_out; i++, tfr_index_next(rank, oshape, o)) {
        acc a = {identity(dtype, op), 0.0, 0, 0};
        int64_t g[TF_MAX_RANK] = {0}, idx[TF_MAX_RANK];
        for (size_t j = 0; j < n_group; j++, tfr_index_next(rank, gshape, g)) {
            for (size_t k = 0; k < rank; k++)
                idx[k] = ((mask >> k) & 1u) ? g[k] : o[k];
            acc_add(&a, dtype, op, in->vals[tfr_index_linear(rank, shape, idx)]);
        }
        want[i] = acc_result(&a, dtype, op, &extra[i]);
    }
}

static void reduce_once(tfr_rng *rng, tf_dtype dtype, tf_reduce_op op, const tfr_gen *gen,
                        size_t rank, const int64_t *shape, uint64_t mask)
{
    int64_t oshape[TF_MAX_RANK];
    char what[160], s[96];
    tfr_input in;
    tfr_input_make(&in, rng, cpu_engine, dtype, rank, shape, tfr_random_layout(rng), gen);
    for (size_t k = 0; k < rank; k++)
        oshape[k] = ((mask >> k) & 1u) ? 1 : shape[k];
    snprintf(what, sizeof what, "reduce %s %s shape %s mask 0x%llx layout %s",
             tf_prim_op_name(TF_PRIM_REDUCE, op), tf_dtype_name(dtype),
             tfr_shape_str(rank, shape, s, sizeof s), (unsigned long long)mask,
             tfr_layout_name(in.layout));
    tf_reduce_params p = {sizeof p, op, mask};
    tf_tensor *out = tfr_output(cpu_engine, dtype, rank, oshape);
    tfr_exec_ok(what, cpu_engine, TF_PRIM_REDUCE, &p, 1, &in.t, 1, &out);
    size_t n = tfr_numel(rank, oshape);
    tf_scalar *got = tfr_read(out), *want = tfr_vals_alloc(n);
    double *extra = calloc(n ? n : 1, sizeof *extra);
    assert_non_null(extra);
    reduce_ref(dtype, op, &in, rank, shape, mask, want, extra);
    tfr_check(what, dtype, n, got, want, extra, tfr_tol_default(dtype));
    free(got);
    free(want);
    free(extra);
    tf_tensor_release(out);
    tfr_input_free(&in);
}

static void reduce_random(tfr_rng *rng, tf_dtype dtype, tf_reduce_op op, const tfr_gen *gen,
                          int trials)
{
    for (int t = 0; t < trials; t++) {
        int64_t shape[TF_MAX_RANK];
        size_t rank = tfr_random_rank(rng, 5);
        tfr_random_shape(rng, rank, rank > 3 ? 4 : 7, 10, shape);
        uint64_t mask = rank ? (uint64_t)tfr_rng_int(rng, 0, ((int64_t)1 << rank) - 1) : 0;
        reduce_once(rng, dtype, op, gen, rank, shape, mask);
    }
}

static void test_reduce_float(void **state)
{
    (void)state;
    static const tf_dtype dtypes[] = {TF_F32, TF_F64};
    tfr_rng rng;
    tfr_rng_seed(&rng, 201);
    for (size_t d = 0; d < 2; d++) {
        for (uint32_t op = 0; op < TF_REDUCE_COUNT_; op++) {
            tfr_gen g = {TFR_UNIFORM, -3.0, 3.0}, special = {TFR_SPECIAL, -3.0, 3.0};
            if (op == TF_REDUCE_PROD) { /* products that neither overflow nor underflow */
                g = (tfr_gen){TFR_UNIFORM, 0.8, 1.25};
                special = (tfr_gen){TFR_INTEGRAL_SPECIAL, -1, 1};
            }
            reduce_random(&rng, dtypes[d], (tf_reduce_op)op, &g, 25);
            reduce_random(&rng, dtypes[d], (tf_reduce_op)op, &special, 12);
        }
    }
}

static void test_reduce_int(void **state)
{
    (void)state;
    static const tf_dtype dtypes[] = {TF_I32, TF_I64};
    tfr_rng rng;
    tfr_rng_seed(&rng, 202);
    for (size_t d = 0; d < 2; d++) {
        for (uint32_t op = 0; op < TF_REDUCE_COUNT_; op++) {
            tfr_gen wide = {TFR_WIDE, 0, 0}, small = {TFR_SPECIAL, -5, 5};
            reduce_random(&rng, dtypes[d], (tf_reduce_op)op, &wide, 20); /* wrapping */
            reduce_random(&rng, dtypes[d], (tf_reduce_op)op, &small, 12);
        }
    }
}

static void test_reduce_bool(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 203);
    tfr_gen g = {TFR_UNIFORM, 0, 1};
    reduce_random(&rng, TF_BOOL, TF_REDUCE_MAX, &g, 40);
    reduce_random(&rng, TF_BOOL, TF_REDUCE_MIN, &g, 40);
}

/* Edge cases: rank 0, mask 0, all axes, empty groups, empty outputs. */
static void test_reduce_edges(void **state)
{
    (void)state;
    static const tf_dtype dtypes[] = {TF_F32, TF_F64, TF_I32, TF_I64};
    static const struct {
        size_t rank;
        int64_t shape[3];
        uint64_t mask;
    } cases[] = {
        {0, {0}, 0},    {1, {5}, 1},       {1, {0}, 1},       {2, {3, 0}, 2},    {2, {3, 0}, 1},
        {2, {0, 4}, 3}, {3, {2, 3, 4}, 7}, {3, {2, 3, 4}, 0}, {3, {2, 1, 4}, 2}, {3, {4, 1, 5}, 5},
    };
    tfr_rng rng;
    tfr_rng_seed(&rng, 204);
    tfr_gen g = {TFR_INTEGRAL, -3, 3};
    for (size_t d = 0; d < 4; d++)
        for (uint32_t op = 0; op < TF_REDUCE_COUNT_; op++)
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                reduce_once(&rng, dtypes[d], (tf_reduce_op)op, &g, cases[i].rank, cases[i].shape,
                            cases[i].mask);
    for (uint32_t op = TF_REDUCE_MAX; op <= TF_REDUCE_MIN; op++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            reduce_once(&rng, TF_BOOL, (tf_reduce_op)op, &g, cases[i].rank, cases[i].shape,
                        cases[i].mask);
}

/* One NaN among many finite values decides MAX and MIN wherever it is. */
static void test_reduce_nan_position(void **state)
{
    (void)state;
    static const tf_dtype dtypes[] = {TF_F32, TF_F64};
    int64_t shape[1] = {37};
    for (size_t d = 0; d < 2; d++) {
        for (int64_t pos = 0; pos < shape[0]; pos += 9) {
            tf_scalar vals[37];
            for (int64_t i = 0; i < shape[0]; i++)
                vals[i] = tfr_f((double)(i % 7) - 3.0);
            vals[pos] = tfr_f(NAN);
            tf_tensor *in = tfr_host(dtypes[d], 1, shape, vals);
            for (uint32_t op = TF_REDUCE_MAX; op <= TF_REDUCE_MIN; op++) {
                tf_reduce_params p = {sizeof p, op, 1};
                int64_t one = 1;
                tf_tensor *out = tfr_output(cpu_engine, dtypes[d], 1, &one);
                tfr_exec_ok("reduce with a NaN", cpu_engine, TF_PRIM_REDUCE, &p, 1, &in, 1, &out);
                tf_scalar *got = tfr_read(out);
                if (!isnan(got[0].f))
                    fail_msg("reduce %s %s with NaN at %lld gave %g, want NaN",
                             tf_prim_op_name(TF_PRIM_REDUCE, op), tf_dtype_name(dtypes[d]),
                             (long long)pos, got[0].f);
                free(got);
                tf_tensor_release(out);
            }
            tf_tensor_release(in);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce_float),        cmocka_unit_test(test_reduce_int),
        cmocka_unit_test(test_reduce_bool),         cmocka_unit_test(test_reduce_edges),
        cmocka_unit_test(test_reduce_nan_position),
    };
    return CPU_RUN_GROUPS("cpu reduce", tests);
}
