/*
 * test_dp_buckets.c - tf_dp_average_grads' buckets (dp_average.c, dp_pack.c)
 * against the mean computed on the host, run by ctest alone and under
 * `mpirun -np 2` and `-np 4`.
 *
 * Every rank builds the same parameters (f32 and f64, mixed sizes, ranks 1
 * and 2) and gives each a gradient of known values on the ranks a rule
 * says (everywhere, rank 0 only, odd ranks only, nowhere), so that each
 * rank can compute every rank's gradients, and so the exact mean, itself.
 * The values are multiples of 1/4 and small: their sums, and the 1/p
 * scale for p a power of two, are exact in f32, so the averages must
 * match to the bit whatever order MPI sums them in. Buckets of 8 MiB take
 * the streaming copy (dp_pack.c). Then the refusals: a
 * rank with other shapes (the ranks' collective does not match) and a
 * bucket that cannot be allocated leave the caller's array and the grad
 * slots as they were.
 */
#include <string.h>

#include <tenferro/dp.h>

#include "train_test.h"

#define NPAR 6

/* Who has a gradient of a parameter. */
typedef enum presence { ALL, RANK0, ODD, NONE } presence;

typedef struct spec {
    tf_dtype dtype;
    size_t rank;
    int64_t shape[2];
    presence who;
} spec;

static const spec k_specs[NPAR] = {
    {TF_F64, 2, {3, 2}, ALL},  {TF_F32, 1, {5, 0}, RANK0}, {TF_F64, 1, {4, 0}, NONE},
    {TF_F32, 1, {1000, 0}, ALL}, {TF_F64, 1, {7, 0}, ODD},   {TF_F32, 2, {2, 3}, ALL},
};

static size_t numel(const spec *s)
{
    return (size_t)s->shape[0] * (size_t)(s->rank == 2 ? s->shape[1] : 1);
}

static int has_grad(presence who, int r)
{
    return who == ALL || (who == RANK0 && r == 0) || (who == ODD && r % 2 == 1);
}

/* Element i of parameter j's gradient on rank r: a small multiple of 1/4. */
static double grad_at(int j, int r, size_t i)
{
    return 0.25 * (double)((r + 1) * (int)(i % 5 + 1) + j) - 1.0;
}

/* A variable of g_cpu's memory: n values of dtype (converted from v). */
static tf_eager *param(tf_runtime *rt, const spec *s, const double *v)
{
    size_t n = numel(s);
    float *f = test_malloc(n * sizeof *f + 1);
    for (size_t i = 0; i < n && s->dtype == TF_F32; i++)
        f[i] = (float)v[i];
    tf_eager *x = trt_param_of(rt, s->dtype, s->rank, s->shape,
                               s->dtype == TF_F32 ? (const void *)f : (const void *)v, n);
    test_free(f);
    return x;
}

/* n values of t (f32 or f64) as doubles. */
static void read_any(const tf_tensor *t, double *out, size_t n)
{
    if (tf_tensor_dtype(t) == TF_F64) {
        trt_read(t, out, n);
        return;
    }
    float *f = test_malloc(n * sizeof *f + 1);
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F32, f, n));
    for (size_t i = 0; i < n; i++)
        out[i] = f[i];
    test_free(f);
}

/* Gives parameter x (spec s) the gradient c by backward of sum(x * c). */
static void give_grad(tf_runtime *rt, tf_eager *x, const spec *s, const double *c)
{
    tf_eager *cst = param(rt, s, c), *prod = NULL, *loss = NULL;
    tf_session *ss = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &ss));
    TF_ASSERT_OK(tf_session_mul(ss, x, cst, &prod));
    TF_ASSERT_OK(tf_session_reduce_sum(ss, prod, NULL, 0, &loss));
    tf_session_end(ss);
    TF_ASSERT_OK(tf_eager_backward(loss, g_cpu));
    tf_eager_release(cst);
    tf_eager_release(prod);
    tf_eager_release(loss);
}

typedef struct fixture {
    tf_runtime *rt;
    tf_dp *dp;
    tf_optim *opt;
    tf_eager *p[NPAR];
    int r, size;
} fixture;

/* The parameters of specs[] with this rank's gradients (extent0 overrides spec 3's). */
static void setup(fixture *f, int64_t extent0)
{
    memset(f, 0, sizeof *f);
    TF_ASSERT_OK(tf_runtime_create(&f->rt));
    TF_ASSERT_OK(tf_dp_create(f->rt, g_cpu, &f->dp));
    f->r = tf_dp_rank(f->dp);
    f->size = tf_dp_size(f->dp);
    double v[1000];
    for (int j = 0; j < NPAR; j++) {
        spec s = k_specs[j];
        if (j == 3 && extent0)
            s.shape[0] = extent0;
        for (size_t i = 0; i < numel(&s); i++)
            v[i] = 0.5 * (double)i;
        f->p[j] = param(f->rt, &s, v);
    }
    TF_ASSERT_OK(tf_optim_create(f->rt, TF_OPTIM_SGD, &f->opt));
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_SGD, &o);
    TF_ASSERT_OK(tf_optim_add_group(f->opt, &o, f->p, NPAR));
    for (int j = 0; j < NPAR; j++) {
        spec s = k_specs[j];
        if (j == 3 && extent0)
            s.shape[0] = extent0;
        if (!has_grad(s.who, f->r))
            continue;
        for (size_t i = 0; i < numel(&s); i++)
            v[i] = grad_at(j, f->r, i);
        give_grad(f->rt, tf_optim_param(f->opt, (size_t)j), &s, v);
    }
}

static void teardown(fixture *f)
{
    for (int j = 0; j < NPAR; j++)
        tf_eager_release(f->p[j]);
    tf_optim_destroy(f->opt);
    tf_dp_destroy(f->dp);
    tf_runtime_release(f->rt);
}

/* Every average against the host's mean over the ranks, to the bit. */
static void check_averages(fixture *f, tf_tensor *const *g)
{
    for (int j = 0; j < NPAR; j++) {
        const spec *s = &k_specs[j];
        int any = 0;
        for (int r = 0; r < f->size; r++)
            any |= has_grad(s->who, r);
        if (!any) {
            assert_null(g[j]);
            continue;
        }
        assert_non_null(g[j]);
        assert_int_equal(tf_tensor_dtype(g[j]), s->dtype);
        assert_int_equal(tf_tensor_rank(g[j]), s->rank);
        assert_memory_equal(tf_tensor_shape(g[j]), s->shape, s->rank * sizeof(int64_t));
        double got[1000], want[1000];
        read_any(g[j], got, numel(s));
        for (size_t i = 0; i < numel(s); i++) {
            double sum = 0;
            for (int r = 0; r < f->size; r++)
                sum += has_grad(s->who, r) ? grad_at(j, r, i) : 0.0;
            want[i] = sum / f->size;
        }
        trt_expect_bits("bucket average", got, want, numel(s));
    }
}

static void run_with(size_t bucket_bytes, size_t want_buckets)
{
    fixture f;
    setup(&f, 0);
    if (bucket_bytes)
        TF_ASSERT_OK(tf_dp_set_bucket_bytes(f.dp, bucket_bytes));
    for (int round = 0; round < 2; round++) { /* the second reuses the packing buffer */
        tf_tensor *g[NPAR] = {NULL};
        TF_ASSERT_OK(tf_dp_average_grads(f.dp, f.opt, g, NPAR));
        assert_int_equal(tf_dp_last_buckets(f.dp), want_buckets);
        check_averages(&f, g);
        for (int j = 0; j < NPAR; j++)
            tf_tensor_release(g[j]);
    }
    teardown(&f);
}

static void test_averages_match_the_host(void **state)
{
    (void)state;
    run_with(0, 2);    /* one bucket per dtype, the mask in the f64 one */
    run_with(1, NPAR); /* one per tensor */
    run_with(80, 5);   /* f32: [5] [1000] [6]; f64 (48, 32, 56 bytes): [6, 4] [7] */
}

/* An average held by the caller across the next call keeps its values. */
static void test_results_outlive_the_next_call(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 0);
    tf_tensor *first[NPAR] = {NULL}, *second[NPAR] = {NULL};
    TF_ASSERT_OK(tf_dp_average_grads(f.dp, f.opt, first, NPAR));
    TF_ASSERT_OK(tf_dp_average_grads(f.dp, f.opt, second, NPAR));
    check_averages(&f, first);
    check_averages(&f, second);
    for (int j = 0; j < NPAR; j++) {
        tf_tensor_release(first[j]);
        tf_tensor_release(second[j]);
    }
    teardown(&f);
}

/*
 * Buckets larger than a core's cache are packed with streaming stores: f32
 * and f64, a part starting at an address that is not 16-byte aligned (after
 * [5] f32 / [3] f64), and lengths that leave a tail.
 */
static void test_large_buckets(void **state)
{
    (void)state;
    static const spec big[4] = {{TF_F32, 1, {5, 0}, ALL},
                                {TF_F32, 1, {(1 << 21) + 5, 0}, ALL},
                                {TF_F64, 1, {3, 0}, ODD},
                                {TF_F64, 1, {(1 << 20) + 2, 0}, ALL}};
    tf_runtime *rt = NULL;
    tf_dp *dp = NULL;
    tf_optim *opt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    TF_ASSERT_OK(tf_dp_create(rt, g_cpu, &dp));
    int r = tf_dp_rank(dp), p = tf_dp_size(dp);
    size_t most = (1 << 21) + 5;
    double *v = test_calloc(most, sizeof *v), *want = test_calloc(most, sizeof *v);
    double *got = test_calloc(most, sizeof *v);
    tf_eager *x[4];
    for (int j = 0; j < 4; j++)
        x[j] = param(rt, &big[j], v);
    TF_ASSERT_OK(tf_optim_create(rt, TF_OPTIM_SGD, &opt));
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_SGD, &o);
    TF_ASSERT_OK(tf_optim_add_group(opt, &o, x, 4));
    for (int j = 0; j < 4; j++) {
        if (!has_grad(big[j].who, r))
            continue;
        for (size_t i = 0; i < numel(&big[j]); i++)
            v[i] = grad_at(j, r, i);
        give_grad(rt, tf_optim_param(opt, (size_t)j), &big[j], v);
    }
    tf_tensor *g[4] = {NULL};
    TF_ASSERT_OK(tf_dp_average_grads(dp, opt, g, 4));
    assert_int_equal(tf_dp_last_buckets(dp), 2);
    for (int j = 0; j < 4; j++) {
        int any = 0;
        for (int q = 0; q < p; q++)
            any |= has_grad(big[j].who, q);
        if (!any) {
            assert_null(g[j]);
            continue;
        }
        size_t n = numel(&big[j]);
        read_any(g[j], got, n);
        for (size_t i = 0; i < n; i++) {
            double sum = 0;
            for (int q = 0; q < p; q++)
                sum += has_grad(big[j].who, q) ? grad_at(j, q, i) : 0.0;
            want[i] = sum / p;
        }
        trt_expect_bits("large bucket average", got, want, n);
    }
    for (int j = 0; j < 4; j++) {
        tf_tensor_release(g[j]);
        tf_eager_release(x[j]);
    }
    test_free(v);
    test_free(want);
    test_free(got);
    tf_optim_destroy(opt);
    tf_dp_destroy(dp);
    tf_runtime_release(rt);
}

/* The grad slots' values, to compare before and after a refused call. */
static void slots(fixture *f, double *out)
{
    for (int j = 0; j < NPAR; j++) {
        tf_tensor *g = NULL;
        TF_ASSERT_OK(tf_eager_grad(tf_optim_param(f->opt, (size_t)j), &g));
        size_t n = g ? tf_tensor_numel(g) : 0;
        if (g)
            read_any(g, out, n);
        out += 1000;
        tf_tensor_release(g);
    }
}

static double g_before[NPAR * 1000], g_after[NPAR * 1000];

/* Before a call that must fail: the slots' values, and g[] filled with a sentinel. */
static void before_refusal(fixture *f, tf_tensor **g, tf_tensor *sentinel)
{
    memset(g_before, 0, sizeof g_before);
    slots(f, g_before);
    for (int j = 0; j < NPAR; j++)
        g[j] = sentinel;
}

static void expect_untouched(fixture *f, tf_tensor **g, tf_tensor *sentinel)
{
    for (int j = 0; j < NPAR; j++)
        assert_ptr_equal(g[j], sentinel);
    memset(g_after, 0, sizeof g_after);
    slots(f, g_after);
    assert_memory_equal(g_after, g_before, sizeof g_after);
}

/* Rank 0 with a parameter of another size: every rank refuses, and nothing changed. */
static void test_mismatched_shapes_are_refused(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 0);
    int p = f.size, r = f.r;
    teardown(&f);
    if (p < 2)
        skip();
    setup(&f, r == 0 ? 999 : 0);
    tf_tensor *sentinel = (tf_tensor *)&f, *g[NPAR];
    before_refusal(&f, g, sentinel);
    trt_expect_fail(tf_dp_average_grads(f.dp, f.opt, g, NPAR), TF_ERR_EXTENSION, NULL);
    assert_non_null(strstr(tf_train_error_message(), "mismatch"));
    expect_untouched(&f, g, sentinel);
    teardown(&f);
}

/* ---- a bucket that cannot be allocated ---- */

static tf_allocator g_real;

static void *refuse_large(void *user, size_t size, size_t align)
{
    return size >= 1000 * sizeof(float) ? NULL : g_real.alloc(user, size, align);
}

static void real_free(void *user, void *ptr)
{
    g_real.free(user, ptr);
}

/* Every rank fails the same allocation before its first collective: all refuse alike. */
static void test_out_of_memory_changes_nothing(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 0);
    tf_tensor *sentinel = (tf_tensor *)&f, *g[NPAR];
    before_refusal(&f, g, sentinel);
    tf_allocator_get(&g_real);
    tf_allocator failing = {refuse_large, real_free, g_real.user};
    tf_allocator_set(&failing);
    tf_status st = tf_dp_average_grads(f.dp, f.opt, g, NPAR);
    tf_allocator_set(&g_real);
    trt_expect_fail(st, TF_ERR_OUT_OF_MEMORY, NULL);
    expect_untouched(&f, g, sentinel);
    tf_tensor *ok[NPAR] = {NULL}; /* and the next call works */
    TF_ASSERT_OK(tf_dp_average_grads(f.dp, f.opt, ok, NPAR));
    check_averages(&f, ok);
    for (int j = 0; j < NPAR; j++)
        tf_tensor_release(ok[j]);
    teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_averages_match_the_host),
        cmocka_unit_test(test_results_outlive_the_next_call),
        cmocka_unit_test(test_large_buckets),
        cmocka_unit_test(test_mismatched_shapes_are_refused),
        cmocka_unit_test(test_out_of_memory_changes_nothing),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
