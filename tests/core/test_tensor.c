/*
 * test_tensor.c - tensors: creation, validation, reading, views, lifetimes.
 *
 * The whole program runs under the counting allocator of tf_test_alloc.h,
 * installed before the first library call: every test checks afterwards
 * that everything it allocated was freed and that the library kept the
 * allocator contract, and the out-of-memory tests make allocations fail in
 * turn. Every failing call is checked to leave its out-parameter untouched.
 *
 * Device memory comes from the devmem fixture engine
 * (tests/plugins/fixtures/devmem.c), whose memory the host cannot address.
 */
#include <math.h>

#include "tf_test.h"
#include "tf_test_alloc.h"

#ifndef TF_FIXTURE_DIR
#error "TF_FIXTURE_DIR must be defined by the build"
#endif
#define DEVMEM_PATH TF_FIXTURE_DIR "/tenferro-engine-devmem.so"

/* Never dereferenced: it only shows whether a failing call wrote *out. */
#define SENTINEL ((tf_tensor *)(uintptr_t)0x5e5e5e50)

/* `call` must fail with `status`, record it in the slot and leave `out` alone. */
#define ASSERT_FAILS(status, out, call)                \
    do {                                               \
        (out) = SENTINEL;                              \
        tf_error_clear();                              \
        TF_ASSERT_STATUS(call, status);                \
        assert_ptr_equal((out), SENTINEL);             \
        assert_int_equal(tf_error_status(), (status)); \
        assert_true(tf_error_message()[0] != '\0');    \
    } while (0)

/* ---- per-test leak check ---- */

static size_t g_base_blocks, g_base_bytes, g_base_violations;

static int setup(void **state)
{
    tf_error_clear();
    tf_test_alloc_fail_at(0, 0);
    g_base_blocks = tf_test_alloc_live_blocks();
    g_base_bytes = tf_test_alloc_live_bytes();
    g_base_violations = tf_test_alloc_violations();
    return 0;
}

static void assert_no_leak(void)
{
    size_t blocks = tf_test_alloc_live_blocks(), bytes = tf_test_alloc_live_bytes();
    if (blocks != g_base_blocks || bytes != g_base_bytes)
        fail_msg("leak: %zu blocks / %zu bytes live, %zu / %zu before the test", blocks, bytes,
                 g_base_blocks, g_base_bytes);
}

static int teardown(void **state)
{
    tf_test_alloc_fail_at(0, 0);
    assert_no_leak();
    if (tf_test_alloc_violations() != g_base_violations)
        fail_msg("allocator contract violated %zu times (size 0, bad alignment or a "
                 "foreign/double free)",
                 tf_test_alloc_violations() - g_base_violations);
    tf_error_clear();
    return 0;
}

/* ---- helpers ---- */

/* A host f64 tensor whose element k (column-major) is k + first. */
static tf_tensor *iota_f64(size_t rank, const int64_t *shape, double first)
{
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    double *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    for (size_t k = 0; k < n; k++)
        v[k] = (double)k + first;
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, rank, shape, v, n, &t));
    free(v);
    return t;
}

/* Reads any host-accessible f64 tensor in column-major order and compares. */
static void assert_f64_values(const tf_tensor *t, const double *want, size_t n)
{
    assert_int_equal(tf_tensor_numel(t), n);
    double got[512];
    assert_true(n <= 512);
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, got, n));
    for (size_t k = 0; k < n; k++)
        if (got[k] != want[k])
            fail_msg("element %zu: got %g, want %g", k, got[k], want[k]);
}

static void assert_shape(const tf_tensor *t, size_t rank, const int64_t *shape)
{
    assert_int_equal(tf_tensor_rank(t), rank);
    const int64_t *s = tf_tensor_shape(t);
    assert_non_null(s);
    for (size_t i = 0; i < rank; i++)
        if (s[i] != shape[i])
            fail_msg("extent %zu: got %lld, want %lld", i, (long long)s[i], (long long)shape[i]);
}

static void assert_strides(const tf_tensor *t, const int64_t *strides)
{
    const int64_t *s = tf_tensor_strides(t);
    assert_non_null(s);
    for (size_t i = 0; i < tf_tensor_rank(t); i++)
        if (s[i] != strides[i])
            fail_msg("stride %zu: got %lld, want %lld", i, (long long)s[i], (long long)strides[i]);
}

/* ---- creation: dtypes, ranks, validation ---- */

static void test_every_dtype(void **state)
{
    float f32[5] = {1.5f, -2.0f, 0.0f, 3.25f, -0.5f};
    double f64[5] = {1e300, -2.5, 0.0, 3.0, -1e-300};
    int32_t i32[5] = {INT32_MIN, -1, 0, 1, INT32_MAX};
    int64_t i64[5] = {INT64_MIN, -1, 0, 1, INT64_MAX};
    uint8_t b[5] = {1, 0, 0, 1, 1};
    /* complex: (re, im) pairs, the layout of float complex / double complex */
    float c64[10] = {1.5f, -2.0f, -0.0f, 0.0f, 3.25f, 1e30f, -0.5f, 7.0f, INFINITY, NAN};
    double c128[10] = {1e300, -2.5, 0.0, -0.0, 3.0, 1e-300, -1e-300, 4.0, -INFINITY, 9.5};
    const void *src[TF_DTYPE_COUNT] = {f32, f64, i32, i64, b, c64, c128};
    const tf_dtype dtypes[TF_DTYPE_COUNT] = {TF_F32, TF_F64, TF_I32, TF_I64,
                                             TF_BOOL, TF_C64, TF_C128};
    int64_t shape[1] = {5};

    for (int d = 0; d < TF_DTYPE_COUNT; d++) {
        tf_tensor *t = NULL;
        TF_ASSERT_OK(tf_tensor_from_host(dtypes[d], 1, shape, src[d], 5, &t));
        assert_int_equal(tf_tensor_dtype(t), dtypes[d]);
        assert_int_equal(tf_tensor_rank(t), 1);
        assert_int_equal(tf_tensor_numel(t), 5);
        assert_int_equal(tf_tensor_shape(t)[0], 5);
        assert_int_equal(tf_tensor_strides(t)[0], 1);
        assert_int_equal(tf_tensor_offset(t), 0);
        assert_true(tf_tensor_is_contiguous(t));
        assert_int_equal(tf_tensor_placement(t), TF_PLACEMENT_HOST);
        assert_null(tf_tensor_engine(t));
        assert_true(tf_tensor_is_host_accessible(t));

        const void *data = NULL;
        size_t count = 0;
        TF_ASSERT_OK(tf_tensor_data(t, dtypes[d], &data, &count));
        assert_int_equal(count, 5);
        assert_ptr_not_equal(data, src[d]);
        assert_memory_equal(data, src[d], 5 * tf_dtype_size(dtypes[d]));
        assert_int_equal((uintptr_t)data % tf_dtype_size(dtypes[d]), 0);
        tf_tensor *rev = NULL; /* a strided view copies out element by element */
        TF_ASSERT_OK(tf_tensor_reverse(t, 1, (const int[]){0}, &rev));
        unsigned char back[5 * 16];
        TF_ASSERT_OK(tf_tensor_copy_to_host(rev, dtypes[d], back, 5));
        size_t es = tf_dtype_size(dtypes[d]);
        for (size_t k = 0; k < 5; k++)
            assert_memory_equal(back + k * es, (const unsigned char *)src[d] + (4 - k) * es, es);
        tf_tensor_release(rev);

        for (int other = 0; other < TF_DTYPE_COUNT; other++) {
            if (other == d)
                continue;
            const void *data2 = (const void *)SENTINEL;
            size_t count2 = 12345;
            TF_ASSERT_STATUS(tf_tensor_data(t, dtypes[other], &data2, &count2),
                             TF_ERR_DTYPE_MISMATCH);
            assert_ptr_equal(data2, (const void *)SENTINEL);
            assert_int_equal(count2, 12345);
            char dst[5 * 16];
            memset(dst, 0x77, sizeof dst);
            TF_ASSERT_STATUS(tf_tensor_copy_to_host(t, dtypes[other], dst, 5),
                             TF_ERR_DTYPE_MISMATCH);
            assert_int_equal((unsigned char)dst[0], 0x77);
        }
        tf_tensor_release(t);
    }
}

static void test_rank0(void **state)
{
    double x = 42.0;
    int64_t unused_shape[1] = {7};
    tf_tensor *a = NULL, *b = NULL, *out;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 0, NULL, &x, 1, &a));
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 0, unused_shape, &x, 1, &b));
    for (int i = 0; i < 2; i++) {
        tf_tensor *t = i ? b : a;
        assert_int_equal(tf_tensor_rank(t), 0);
        assert_int_equal(tf_tensor_numel(t), 1);
        assert_non_null(tf_tensor_shape(t));
        assert_non_null(tf_tensor_strides(t));
        assert_true(tf_tensor_is_contiguous(t));
        const void *data;
        size_t count = 0;
        TF_ASSERT_OK(tf_tensor_data(t, TF_F64, &data, &count));
        assert_int_equal(count, 1);
        assert_true(*(const double *)data == 42.0);
    }
    ASSERT_FAILS(TF_ERR_ELEMENT_COUNT, out, tf_tensor_from_host(TF_F64, 0, NULL, &x, 0, &out));
    ASSERT_FAILS(TF_ERR_ELEMENT_COUNT, out, tf_tensor_from_host(TF_F64, 0, NULL, &x, 2, &out));
    tf_tensor_release(a);
    tf_tensor_release(b);
}

static void test_ranks_up_to_max(void **state)
{
    int64_t shape[TF_MAX_RANK + 1], strides[TF_MAX_RANK + 1];
    for (size_t i = 0; i < TF_MAX_RANK + 1; i++)
        shape[i] = 2;
    for (size_t r = 1; r <= TF_MAX_RANK; r++) {
        tf_tensor *t = iota_f64(r, shape, 0);
        assert_int_equal(tf_tensor_rank(t), r);
        assert_int_equal(tf_tensor_numel(t), (size_t)1 << r);
        for (size_t i = 0; i < r; i++)
            strides[i] = (int64_t)1 << i;
        assert_strides(t, strides);
        /* The last element of the 2x2x...x2 tensor via a rank-0 view. */
        tf_tensor *last = NULL;
        TF_ASSERT_OK(tf_tensor_view(t, 0, NULL, NULL, ((int64_t)1 << r) - 1, &last));
        double want = (double)(((size_t)1 << r) - 1);
        assert_f64_values(last, &want, 1);
        tf_tensor_release(last);
        tf_tensor_release(t);
    }
    double x[512] = {0};
    tf_tensor *out, *base = iota_f64(1, shape, 0);
    ASSERT_FAILS(TF_ERR_RANK_TOO_LARGE, out,
                 tf_tensor_from_host(TF_F64, TF_MAX_RANK + 1, shape, x, 512, &out));
    assert_non_null(strstr(tf_error_argument(), "rank"));
    ASSERT_FAILS(TF_ERR_RANK_TOO_LARGE, out,
                 tf_tensor_wrap_host(TF_F64, TF_MAX_RANK + 1, shape, x, 512, NULL, NULL, &out));
    for (size_t i = 0; i < TF_MAX_RANK + 1; i++)
        shape[i] = 1;
    shape[0] = 2; /* same element count as base: only the rank is wrong */
    ASSERT_FAILS(TF_ERR_RANK_TOO_LARGE, out,
                 tf_tensor_view(base, TF_MAX_RANK + 1, shape, NULL, 0, &out));
    ASSERT_FAILS(TF_ERR_RANK_TOO_LARGE, out, tf_tensor_reshape(base, TF_MAX_RANK + 1, shape, &out));
    int dims[1] = {0};
    ASSERT_FAILS(TF_ERR_RANK_TOO_LARGE, out,
                 tf_tensor_broadcast_in_dim(base, TF_MAX_RANK + 1, shape, dims, &out));
    tf_tensor_release(base);
}

static void test_element_count_mismatch(void **state)
{
    double x[8] = {0};
    int64_t shape[2] = {2, 3};
    tf_tensor *out;
    ASSERT_FAILS(TF_ERR_ELEMENT_COUNT, out, tf_tensor_from_host(TF_F64, 2, shape, x, 5, &out));
    /* The message gives both counts. */
    assert_non_null(strstr(tf_error_message(), "5"));
    assert_non_null(strstr(tf_error_message(), "6"));
    ASSERT_FAILS(TF_ERR_ELEMENT_COUNT, out, tf_tensor_from_host(TF_F64, 2, shape, x, 7, &out));
    ASSERT_FAILS(TF_ERR_ELEMENT_COUNT, out,
                 tf_tensor_wrap_host(TF_F64, 2, shape, x, 8, NULL, NULL, &out));
}

static void test_shape_overflow(void **state)
{
    static double x[4];
    const int64_t big = (int64_t)1 << 40;
    int64_t shape[2] = {big, big};
    tf_tensor *out;
    ASSERT_FAILS(TF_ERR_SHAPE_OVERFLOW, out, tf_tensor_from_host(TF_F64, 2, shape, x, 0, &out));
    ASSERT_FAILS(TF_ERR_SHAPE_OVERFLOW, out,
                 tf_tensor_wrap_host(TF_F64, 2, shape, x, 0, NULL, NULL, &out));
    /* The element count fits, the byte size (2^61 * 8 = 2^64) does not. */
    int64_t bytes_overflow[1] = {(int64_t)1 << 61};
    ASSERT_FAILS(
        TF_ERR_SHAPE_OVERFLOW, out,
        tf_tensor_wrap_host(TF_F64, 1, bytes_overflow, x, (size_t)1 << 61, NULL, NULL, &out));

    tf_tensor *t = iota_f64(1, (int64_t[]){4}, 0);
    ASSERT_FAILS(TF_ERR_SHAPE_OVERFLOW, out, tf_tensor_view(t, 2, shape, NULL, 0, &out));
    ASSERT_FAILS(TF_ERR_SHAPE_OVERFLOW, out, tf_tensor_reshape(t, 2, shape, &out));
    tf_tensor_release(t);
}

static void test_negative_extent(void **state)
{
    double x[4] = {0};
    int64_t shape[2] = {2, -2};
    tf_tensor *out;
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_from_host(TF_F64, 2, shape, x, 4, &out));
    assert_non_null(strstr(tf_error_argument(), "shape"));
    assert_non_null(strstr(tf_error_message(), "-2"));
    ASSERT_FAILS(TF_ERR_VALIDATION, out,
                 tf_tensor_wrap_host(TF_F64, 2, shape, x, 4, NULL, NULL, &out));
    assert_non_null(strstr(tf_error_argument(), "shape"));

    tf_tensor *t = iota_f64(1, (int64_t[]){4}, 0);
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_view(t, 2, shape, NULL, 0, &out));
    assert_non_null(strstr(tf_error_argument(), "shape"));
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_reshape(t, 2, shape, &out));
    int64_t neg_both[2] = {-2, -2}; /* product 4 must not pass for a valid shape */
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_reshape(t, 2, neg_both, &out));
    tf_tensor_release(t);
}

static void test_bad_dtype_and_null_pointers(void **state)
{
    double x[4] = {0};
    int64_t shape[1] = {4};
    tf_tensor *out;
    const int bad[] = {TF_DTYPE_COUNT, -1, 1000};
    for (size_t i = 0; i < 3; i++) {
        ASSERT_FAILS(TF_ERR_VALIDATION, out,
                     tf_tensor_from_host((tf_dtype)bad[i], 1, shape, x, 4, &out));
        assert_non_null(strstr(tf_error_argument(), "dtype"));
    }
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_from_host(TF_F64, 1, shape, NULL, 4, &out));
    assert_non_null(strstr(tf_error_argument(), "data"));
    ASSERT_FAILS(TF_ERR_VALIDATION, out,
                 tf_tensor_wrap_host(TF_F64, 1, shape, NULL, 4, NULL, NULL, &out));
    assert_non_null(strstr(tf_error_argument(), "data"));
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_from_host(TF_F64, 1, NULL, x, 4, &out));
    assert_non_null(strstr(tf_error_argument(), "shape"));
    TF_ASSERT_STATUS(tf_tensor_from_host(TF_F64, 1, shape, x, 4, NULL), TF_ERR_VALIDATION);

    /* NULL data is fine for no elements. */
    int64_t empty[1] = {0};
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, empty, NULL, 0, &t));
    assert_int_equal(tf_tensor_numel(t), 0);
    tf_tensor_release(t);
    tf_tensor_release(NULL);
    tf_tensor_retain(NULL);
}

/* ---- reading ---- */

static void test_strided_views_are_not_slices(void **state)
{
    int64_t shape[2] = {2, 3};
    tf_tensor *t = iota_f64(2, shape, 0), *tr = NULL, *rev = NULL, *sl = NULL, *bc = NULL;
    int perm[2] = {1, 0}, axes[1] = {0};
    TF_ASSERT_OK(tf_tensor_transpose(t, perm, &tr));
    TF_ASSERT_OK(tf_tensor_reverse(t, 1, axes, &rev));
    TF_ASSERT_OK(tf_tensor_slice(t, (int64_t[]){0, 0}, (int64_t[]){2, 3}, (int64_t[]){1, 2}, &sl));
    int64_t bshape[3] = {2, 3, 2};
    int dims[2] = {0, 1};
    TF_ASSERT_OK(tf_tensor_broadcast_in_dim(t, 3, bshape, dims, &bc));
    tf_tensor *views[4] = {tr, rev, sl, bc};
    for (int i = 0; i < 4; i++) {
        assert_false(tf_tensor_is_contiguous(views[i]));
        assert_true(tf_tensor_shares_storage(views[i], t));
        const void *data = (const void *)SENTINEL;
        size_t count = 999;
        TF_ASSERT_STATUS(tf_tensor_data(views[i], TF_F64, &data, &count), TF_ERR_NOT_CONTIGUOUS);
        assert_ptr_equal(data, (const void *)SENTINEL);
        assert_int_equal(count, 999);
    }
    const double want_tr[6] = {0, 2, 4, 1, 3, 5};
    const double want_rev[6] = {1, 0, 3, 2, 5, 4};
    const double want_sl[4] = {0, 1, 4, 5};
    const double want_bc[12] = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
    assert_f64_values(tr, want_tr, 6);
    assert_f64_values(rev, want_rev, 6);
    assert_f64_values(sl, want_sl, 4);
    assert_f64_values(bc, want_bc, 12);
    for (int i = 0; i < 4; i++)
        tf_tensor_release(views[i]);
    tf_tensor_release(t);
}

static void test_copy_to_host_errors(void **state)
{
    tf_tensor *t = iota_f64(1, (int64_t[]){3}, 1);
    double dst[4] = {-7, -7, -7, -7};
    TF_ASSERT_STATUS(tf_tensor_copy_to_host(t, TF_F64, dst, 2), TF_ERR_ELEMENT_COUNT);
    TF_ASSERT_STATUS(tf_tensor_copy_to_host(t, TF_F64, dst, 4), TF_ERR_ELEMENT_COUNT);
    TF_ASSERT_STATUS(tf_tensor_copy_to_host(t, TF_F32, dst, 3), TF_ERR_DTYPE_MISMATCH);
    TF_ASSERT_STATUS(tf_tensor_copy_to_host(t, TF_F64, NULL, 3), TF_ERR_VALIDATION);
    assert_true(dst[0] == -7 && dst[1] == -7 && dst[2] == -7 && dst[3] == -7);
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, dst, 3));
    assert_true(dst[0] == 1 && dst[1] == 2 && dst[2] == 3 && dst[3] == -7);
    tf_tensor_release(t);
}

/* ---- device memory (devmem fixture) ---- */

static void test_device_memory_is_not_host_memory(void **state)
{
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open(DEVMEM_PATH, 0, &e));
    assert_false(tf_engine_uses_host_memory(e));
    int64_t shape[2] = {2, 3};
    tf_tensor *h = iota_f64(2, shape, 10), *d = NULL, *back = NULL, *view = NULL, *out;
    TF_ASSERT_OK(tf_engine_upload(e, h, &d));
    assert_int_equal(tf_tensor_placement(d), TF_PLACEMENT_ENGINE);
    assert_ptr_equal(tf_tensor_engine(d), e);
    assert_false(tf_tensor_is_host_accessible(d));
    assert_false(tf_tensor_shares_storage(d, h));
    assert_shape(d, 2, shape);

    const void *data = (const void *)SENTINEL;
    size_t count = 77;
    TF_ASSERT_STATUS(tf_tensor_data(d, TF_F64, &data, &count), TF_ERR_PLACEMENT);
    assert_ptr_equal(data, (const void *)SENTINEL);
    assert_int_equal(count, 77);
    /* The message says how to get at the data. */
    assert_true(tf_error_message()[0] != '\0');
    double dst[6] = {0};
    TF_ASSERT_STATUS(tf_tensor_copy_to_host(d, TF_F64, dst, 6), TF_ERR_PLACEMENT);
    assert_true(dst[0] == 0);

    /* Views of device memory are device memory too. */
    int perm[2] = {1, 0};
    TF_ASSERT_OK(tf_tensor_transpose(d, perm, &view));
    assert_false(tf_tensor_is_host_accessible(view));
    assert_ptr_equal(tf_tensor_engine(view), e);
    TF_ASSERT_STATUS(tf_tensor_copy_to_host(view, TF_F64, dst, 6), TF_ERR_PLACEMENT);

    /* Downloads bring the values back, the transposed view's in its own order. */
    TF_ASSERT_OK(tf_engine_download(e, d, &back));
    assert_int_equal(tf_tensor_placement(back), TF_PLACEMENT_HOST);
    const double want[6] = {10, 11, 12, 13, 14, 15};
    assert_f64_values(back, want, 6);
    tf_tensor_release(back);
    TF_ASSERT_OK(tf_engine_download(e, view, &back));
    const double want_t[6] = {10, 12, 14, 11, 13, 15};
    assert_shape(back, 2, (int64_t[]){3, 2});
    assert_f64_values(back, want_t, 6);
    tf_tensor_release(back);

    /* A host tensor is not the engine's to download. */
    ASSERT_FAILS(TF_ERR_PLACEMENT, out, tf_engine_download(e, h, &out));

    /* An empty engine tensor is device memory as well. */
    tf_tensor *empty = NULL;
    TF_ASSERT_OK(tf_tensor_empty(e, TF_I32, 1, (int64_t[]){4}, &empty));
    TF_ASSERT_STATUS(tf_tensor_data(empty, TF_I32, &data, &count), TF_ERR_PLACEMENT);
    tf_tensor_release(empty);

    tf_tensor_release(view);
    tf_tensor_release(d);
    tf_tensor_release(h);
    tf_engine_destroy(e);
}

static void test_device_round_trip_all_dtypes(void **state)
{
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open(DEVMEM_PATH, 0, &e));
    float f32[6] = {1.5f, -2, 0, 3.25f, -0.5f, 8};
    double f64[6] = {1e300, -2.5, 0, 3, -1e-300, 7};
    int32_t i32[6] = {INT32_MIN, -1, 0, 1, INT32_MAX, 5};
    int64_t i64[6] = {INT64_MIN, -1, 0, 1, INT64_MAX, 5};
    uint8_t b[6] = {1, 0, 0, 1, 1, 0};
    float c64[12] = {1.5f, -2, 0, -0.0f, 3.25f, 1, -0.5f, 8, 2, 3, 4, 5};
    double c128[12] = {1e300, -2.5, 0, 3, -1e-300, 7, 1, 2, 3, 4, -0.0, 6};
    const void *src[TF_DTYPE_COUNT] = {f32, f64, i32, i64, b, c64, c128};
    int64_t shape[2] = {3, 2};
    for (int d = 0; d < TF_DTYPE_COUNT; d++) {
        tf_dtype dt = (tf_dtype)d;
        size_t es = tf_dtype_size(dt);
        tf_tensor *h = NULL, *dev = NULL, *back = NULL, *rev = NULL, *rdev = NULL;
        TF_ASSERT_OK(tf_tensor_from_host(dt, 2, shape, src[d], 6, &h));
        TF_ASSERT_OK(tf_engine_upload(e, h, &dev));
        assert_int_equal(tf_tensor_dtype(dev), dt);
        TF_ASSERT_OK(tf_engine_download(e, dev, &back));
        const void *data;
        size_t count;
        TF_ASSERT_OK(tf_tensor_data(back, dt, &data, &count));
        assert_int_equal(count, 6);
        assert_memory_equal(data, src[d], 6 * es);

        /* Upload of a strided host view (reversed rows): stored densely. */
        int axes[1] = {0};
        TF_ASSERT_OK(tf_tensor_reverse(h, 1, axes, &rev));
        TF_ASSERT_OK(tf_engine_upload(e, rev, &rdev));
        tf_tensor_release(back);
        TF_ASSERT_OK(tf_engine_download(e, rdev, &back));
        TF_ASSERT_OK(tf_tensor_data(back, dt, &data, &count));
        const unsigned char *s = src[d], *g = data;
        static const int order[6] = {2, 1, 0, 5, 4, 3};
        for (int k = 0; k < 6; k++)
            assert_memory_equal(g + (size_t)k * es, s + (size_t)order[k] * es, es);

        tf_tensor_release(back);
        tf_tensor_release(rdev);
        tf_tensor_release(rev);
        tf_tensor_release(dev);
        tf_tensor_release(h);
    }
    tf_engine_destroy(e);
}

/* A plugin's host->alloc goes through the application's allocator (system.h). */
static void test_plugin_allocations_are_counted(void **state)
{
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open(DEVMEM_PATH, 0, &e));
    tf_tensor *h = iota_f64(1, (int64_t[]){1000}, 0), *d = NULL;
    size_t before = tf_test_alloc_live_bytes();
    TF_ASSERT_OK(tf_engine_upload(e, h, &d));
    /* devmem keeps the 8000 bytes in a block from host->alloc */
    assert_true(tf_test_alloc_live_bytes() >= before + 8000);
    tf_tensor_release(d);
    assert_int_equal(tf_test_alloc_live_bytes(), before);
    tf_tensor_release(h);
    tf_engine_destroy(e);
}

/* ---- borrowing and copying ---- */

typedef struct release_log {
    int calls;
    void *user;
    void *data;
} release_log;

static void on_release(void *user, void *data)
{
    release_log *log = user;
    log->calls++;
    log->user = user;
    log->data = data;
}

static void test_wrap_host_borrows(void **state)
{
    int32_t buf[6] = {0, 1, 2, 3, 4, 5};
    int64_t shape[2] = {3, 2};
    release_log log = {0};
    tf_tensor *t = NULL, *v = NULL, *v2 = NULL;
    TF_ASSERT_OK(tf_tensor_wrap_host(TF_I32, 2, shape, buf, 6, on_release, &log, &t));
    const void *data;
    size_t count;
    TF_ASSERT_OK(tf_tensor_data(t, TF_I32, &data, &count));
    assert_ptr_equal(data, buf); /* no copy */
    assert_int_equal(count, 6);
    assert_int_equal(tf_tensor_placement(t), TF_PLACEMENT_HOST);

    int perm[2] = {1, 0};
    TF_ASSERT_OK(tf_tensor_transpose(t, perm, &v));
    TF_ASSERT_OK(tf_tensor_reshape(t, 1, (int64_t[]){6}, &v2));
    tf_tensor_retain(t);
    tf_tensor_release(t);
    tf_tensor_release(t);
    assert_int_equal(log.calls, 0);
    int32_t got[6];
    TF_ASSERT_OK(tf_tensor_copy_to_host(v, TF_I32, got, 6));
    assert_true(got[1] == 3 && got[2] == 1);
    tf_tensor_release(v);
    assert_int_equal(log.calls, 0);
    TF_ASSERT_OK(tf_tensor_data(v2, TF_I32, &data, &count));
    assert_ptr_equal(data, buf);
    tf_tensor_release(v2);
    assert_int_equal(log.calls, 1);
    assert_ptr_equal(log.user, &log);
    assert_ptr_equal(log.data, buf);

    /* Without a callback. */
    TF_ASSERT_OK(tf_tensor_wrap_host(TF_I32, 2, shape, buf, 6, NULL, NULL, &t));
    tf_tensor_release(t);

    /* Failures never call release and keep nothing. */
    release_log none = {0};
    tf_tensor *out;
    ASSERT_FAILS(TF_ERR_ELEMENT_COUNT, out,
                 tf_tensor_wrap_host(TF_I32, 2, shape, buf, 5, on_release, &none, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out,
                 tf_tensor_wrap_host((tf_dtype)9, 2, shape, buf, 6, on_release, &none, &out));
    ASSERT_FAILS(
        TF_ERR_VALIDATION, out,
        tf_tensor_wrap_host(TF_I32, 2, (int64_t[]){3, -2}, buf, 6, on_release, &none, &out));
    assert_int_equal(none.calls, 0);
}

static void test_from_host_copies(void **state)
{
    double src[3] = {1, 2, 3};
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F64, 1, (int64_t[]){3}, src, 3, &t));
    src[0] = 100;
    src[2] = -100;
    const double want[3] = {1, 2, 3};
    assert_f64_values(t, want, 3);
    const void *data;
    size_t count;
    TF_ASSERT_OK(tf_tensor_data(t, TF_F64, &data, &count));
    assert_ptr_not_equal(data, src);
    tf_tensor_release(t);
}

static void test_column_major(void **state)
{
    int64_t shape[3] = {2, 3, 4};
    tf_tensor *t = iota_f64(3, shape, 0);
    assert_strides(t, (int64_t[]){1, 2, 6});
    /* Element (i, j, k) is i + 2j + 6k: read (1, 2, 3) through a rank-0 view. */
    tf_tensor *e = NULL;
    TF_ASSERT_OK(tf_tensor_view(t, 0, NULL, NULL, 1 + 2 * 2 + 6 * 3, &e));
    const double want = 23;
    assert_f64_values(e, &want, 1);
    tf_tensor_release(e);

    /* The transpose of a 2x3 reads row by row of the original. */
    tf_tensor *m = iota_f64(2, (int64_t[]){2, 3}, 0), *mt = NULL;
    TF_ASSERT_OK(tf_tensor_transpose(m, (int[]){1, 0}, &mt));
    assert_shape(mt, 2, (int64_t[]){3, 2});
    assert_strides(mt, (int64_t[]){2, 1});
    const double want_t[6] = {0, 2, 4, 1, 3, 5};
    assert_f64_values(mt, want_t, 6);
    tf_tensor_release(mt);
    tf_tensor_release(m);
    tf_tensor_release(t);
}

/* ---- tf_tensor_view ---- */

static void test_view_broadcast_strides(void **state)
{
    tf_tensor *t = iota_f64(1, (int64_t[]){3}, 1), *v = NULL;
    TF_ASSERT_OK(tf_tensor_view(t, 2, (int64_t[]){3, 2}, (int64_t[]){1, 0}, 0, &v));
    const double w1[6] = {1, 2, 3, 1, 2, 3};
    assert_f64_values(v, w1, 6);
    assert_false(tf_tensor_is_contiguous(v));
    assert_true(tf_tensor_shares_storage(v, t));
    tf_tensor_release(v);
    TF_ASSERT_OK(tf_tensor_view(t, 2, (int64_t[]){2, 3}, (int64_t[]){0, 1}, 0, &v));
    const double w2[6] = {1, 1, 2, 2, 3, 3};
    assert_f64_values(v, w2, 6);
    tf_tensor_release(v);
    /* All strides 0: one element seen many times; a huge extent is fine. */
    TF_ASSERT_OK(tf_tensor_view(t, 1, (int64_t[]){4}, (int64_t[]){0}, 2, &v));
    const double w3[4] = {3, 3, 3, 3};
    assert_f64_values(v, w3, 4);
    tf_tensor_release(v);
    TF_ASSERT_OK(tf_tensor_view(t, 2, (int64_t[]){1 << 20, 1 << 20}, (int64_t[]){0, 0}, 1, &v));
    assert_int_equal(tf_tensor_numel(v), (size_t)1 << 40);
    tf_tensor_release(v);
    tf_tensor_release(t);
}

static void test_view_negative_strides(void **state)
{
    tf_tensor *t = iota_f64(1, (int64_t[]){4}, 0), *v = NULL, *out;
    TF_ASSERT_OK(tf_tensor_view(t, 1, (int64_t[]){4}, (int64_t[]){-1}, 3, &v));
    const double w1[4] = {3, 2, 1, 0};
    assert_f64_values(v, w1, 4);
    tf_tensor_release(v);
    ASSERT_FAILS(TF_ERR_OUT_OF_RANGE, out,
                 tf_tensor_view(t, 1, (int64_t[]){4}, (int64_t[]){-1}, 2, &out));
    tf_tensor_release(t);

    tf_tensor *m = iota_f64(2, (int64_t[]){2, 3}, 0);
    TF_ASSERT_OK(tf_tensor_view(m, 2, (int64_t[]){2, 3}, (int64_t[]){-1, -2}, 5, &v));
    const double w2[6] = {5, 4, 3, 2, 1, 0};
    assert_f64_values(v, w2, 6);
    tf_tensor_release(v);
    /* Mixed signs: rows forward, columns backward. */
    TF_ASSERT_OK(tf_tensor_view(m, 2, (int64_t[]){2, 3}, (int64_t[]){1, -2}, 4, &v));
    const double w3[6] = {4, 5, 2, 3, 0, 1};
    assert_f64_values(v, w3, 6);
    tf_tensor_release(v);
    tf_tensor_release(m);
}

static void test_view_offsets_and_bounds(void **state)
{
    tf_tensor *t = iota_f64(1, (int64_t[]){10}, 0), *v = NULL, *w = NULL, *out;
    TF_ASSERT_OK(tf_tensor_view(t, 1, (int64_t[]){3}, (int64_t[]){2}, 4, &v));
    assert_int_equal(tf_tensor_offset(v), 4);
    const double w1[3] = {4, 6, 8};
    assert_f64_values(v, w1, 3);
    /* A view's offset counts from the start of the storage, not of the tensor. */
    TF_ASSERT_OK(tf_tensor_view(v, 1, (int64_t[]){2}, (int64_t[]){1}, 1, &w));
    const double w2[2] = {1, 2};
    assert_f64_values(w, w2, 2);
    tf_tensor_release(w);
    /* NULL strides: dense column-major from the offset. */
    TF_ASSERT_OK(tf_tensor_view(v, 2, (int64_t[]){2, 3}, NULL, 3, &w));
    assert_strides(w, (int64_t[]){1, 2});
    const double w3[6] = {3, 4, 5, 6, 7, 8};
    assert_f64_values(w, w3, 6);
    tf_tensor_release(w);
    TF_ASSERT_OK(tf_tensor_view(t, 1, (int64_t[]){3}, (int64_t[]){2}, 5, &w)); /* 5,7,9 */
    tf_tensor_release(w);
    TF_ASSERT_OK(tf_tensor_view(t, 0, NULL, NULL, 9, &w));
    const double w4 = 9;
    assert_f64_values(w, &w4, 1);
    tf_tensor_release(w);

    ASSERT_FAILS(TF_ERR_OUT_OF_RANGE, out,
                 tf_tensor_view(t, 1, (int64_t[]){3}, (int64_t[]){2}, 6, &out));
    ASSERT_FAILS(TF_ERR_OUT_OF_RANGE, out, tf_tensor_view(t, 0, NULL, NULL, 10, &out));
    ASSERT_FAILS(TF_ERR_OUT_OF_RANGE, out, tf_tensor_view(t, 0, NULL, NULL, -1, &out));
    ASSERT_FAILS(TF_ERR_OUT_OF_RANGE, out, tf_tensor_view(t, 1, (int64_t[]){11}, NULL, 0, &out));
    ASSERT_FAILS(TF_ERR_OUT_OF_RANGE, out,
                 tf_tensor_view(t, 2, (int64_t[]){5, 2}, (int64_t[]){1, 6}, 0, &out));
    /*
     * Strides whose reach overflows int64: (5 - 1) * 2^62 wraps to 0, so a
     * check in plain int64 arithmetic would find every element "at" the
     * offset. The element is outside the storage whichever code says so.
     */
    const int64_t huge[3] = {(int64_t)1 << 62, INT64_MAX, INT64_MIN};
    for (int i = 0; i < 3; i++) {
        out = SENTINEL;
        tf_status st = tf_tensor_view(t, 1, (int64_t[]){5}, &huge[i], 1, &out);
        if (st != TF_ERR_OUT_OF_RANGE && st != TF_ERR_SHAPE_OVERFLOW)
            fail_msg("view with stride %lld -> %s, want TF_ERR_OUT_OF_RANGE", (long long)huge[i],
                     tf_status_name(st));
        assert_ptr_equal(out, SENTINEL);
    }
    /* Offsets at the ends of int64: offset + reach must not overflow either. */
    ASSERT_FAILS(TF_ERR_OUT_OF_RANGE, out,
                 tf_tensor_view(t, 1, (int64_t[]){2}, (int64_t[]){1}, INT64_MAX, &out));
    ASSERT_FAILS(TF_ERR_OUT_OF_RANGE, out,
                 tf_tensor_view(t, 1, (int64_t[]){2}, (int64_t[]){-1}, INT64_MIN, &out));
    /*
     * Bytes of one: an extent of 2^62 + 1 is a valid element count, each
     * stride (4) is smaller than the storage, yet the reach 2^62 * 4 = 2^64
     * wraps to 0 in int64 arithmetic.
     */
    tf_tensor *b = NULL;
    uint8_t bits[10] = {0};
    TF_ASSERT_OK(tf_tensor_from_host(TF_BOOL, 1, (int64_t[]){10}, bits, 10, &b));
    out = SENTINEL;
    tf_status st =
        tf_tensor_view(b, 1, (int64_t[]){((int64_t)1 << 62) + 1}, (int64_t[]){4}, 0, &out);
    if (st != TF_ERR_OUT_OF_RANGE && st != TF_ERR_SHAPE_OVERFLOW)
        fail_msg("bool view of 2^62+1 elements with stride 4 over 10 -> %s, want "
                 "TF_ERR_OUT_OF_RANGE",
                 tf_status_name(st));
    assert_ptr_equal(out, SENTINEL);
    tf_tensor_release(b);
    tf_tensor_release(v);
    tf_tensor_release(t);
}

/* ---- reshape, transpose, slice, broadcast, reverse, diagonal ---- */

static void test_reshape(void **state)
{
    tf_tensor *t = iota_f64(2, (int64_t[]){2, 3}, 0), *r = NULL, *tr = NULL, *out;
    const double all[6] = {0, 1, 2, 3, 4, 5};
    TF_ASSERT_OK(tf_tensor_reshape(t, 2, (int64_t[]){3, 2}, &r));
    assert_shape(r, 2, (int64_t[]){3, 2});
    assert_strides(r, (int64_t[]){1, 3});
    assert_true(tf_tensor_shares_storage(r, t));
    assert_f64_values(r, all, 6);
    tf_tensor_release(r);
    TF_ASSERT_OK(tf_tensor_reshape(t, 3, (int64_t[]){1, 6, 1}, &r));
    assert_f64_values(r, all, 6);
    tf_tensor_release(r);

    tf_tensor *one = iota_f64(1, (int64_t[]){1}, 7), *s = NULL;
    TF_ASSERT_OK(tf_tensor_reshape(one, 0, NULL, &s));
    assert_int_equal(tf_tensor_rank(s), 0);
    TF_ASSERT_OK(tf_tensor_reshape(s, 2, (int64_t[]){1, 1}, &r));
    const double seven = 7;
    assert_f64_values(r, &seven, 1);
    tf_tensor_release(r);
    tf_tensor_release(s);
    tf_tensor_release(one);

    TF_ASSERT_OK(tf_tensor_transpose(t, (int[]){1, 0}, &tr));
    ASSERT_FAILS(TF_ERR_NOT_CONTIGUOUS, out, tf_tensor_reshape(tr, 1, (int64_t[]){6}, &out));
    ASSERT_FAILS(TF_ERR_ELEMENT_COUNT, out, tf_tensor_reshape(t, 1, (int64_t[]){5}, &out));
    ASSERT_FAILS(TF_ERR_ELEMENT_COUNT, out, tf_tensor_reshape(t, 0, NULL, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_reshape(t, 2, NULL, &out));
    tf_tensor_release(tr);
    tf_tensor_release(t);
}

static void test_transpose(void **state)
{
    int64_t shape[3] = {2, 3, 4};
    tf_tensor *t = iota_f64(3, shape, 0), *p = NULL, *out;
    /* Output axis i is input axis perm[i]: [2,3,4] -> [4,2,3]. */
    const int perms[2][3] = {{2, 0, 1}, {-1, 0, -2}};
    for (int which = 0; which < 2; which++) {
        TF_ASSERT_OK(tf_tensor_transpose(t, perms[which], &p));
        assert_shape(p, 3, (int64_t[]){4, 2, 3});
        assert_strides(p, (int64_t[]){6, 1, 2});
        /* out(a,b,c) = in(b,c,a) = b + 2c + 6a, listed column-major (a fastest) */
        double want[24];
        size_t n = 0;
        for (int c = 0; c < 3; c++)
            for (int b = 0; b < 2; b++)
                for (int a = 0; a < 4; a++)
                    want[n++] = b + 2 * c + 6 * a;
        assert_f64_values(p, want, 24);
        tf_tensor_release(p);
    }
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_transpose(t, (int[]){0, 0, 1}, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_transpose(t, (int[]){0, -3, 1}, &out));
    ASSERT_FAILS(TF_ERR_AXIS_OUT_OF_BOUNDS, out, tf_tensor_transpose(t, (int[]){0, 1, 3}, &out));
    ASSERT_FAILS(TF_ERR_AXIS_OUT_OF_BOUNDS, out, tf_tensor_transpose(t, (int[]){0, 1, -4}, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_transpose(t, NULL, &out));
    /* Transposing back restores the dense layout. */
    tf_tensor *q = NULL;
    TF_ASSERT_OK(tf_tensor_transpose(t, (int[]){2, 0, 1}, &p));
    TF_ASSERT_OK(tf_tensor_transpose(p, (int[]){1, 2, 0}, &q));
    assert_shape(q, 3, shape);
    assert_true(tf_tensor_is_contiguous(q));
    tf_tensor_release(q);
    tf_tensor_release(p);
    tf_tensor_release(t);
}

static void test_slice(void **state)
{
    tf_tensor *t = iota_f64(2, (int64_t[]){4, 5}, 0), *s = NULL, *s2 = NULL, *out;
    /* rows 1,3 x columns 0,2,4 of x(i,j) = i + 4j */
    TF_ASSERT_OK(tf_tensor_slice(t, (int64_t[]){1, 0}, (int64_t[]){4, 5}, (int64_t[]){2, 2}, &s));
    assert_shape(s, 2, (int64_t[]){2, 3});
    assert_strides(s, (int64_t[]){2, 8});
    assert_int_equal(tf_tensor_offset(s), 1);
    const double w1[6] = {1, 3, 9, 11, 17, 19};
    assert_f64_values(s, w1, 6);
    /* A slice of a slice composes offsets and strides. */
    TF_ASSERT_OK(tf_tensor_slice(s, (int64_t[]){1, 1}, (int64_t[]){2, 3}, (int64_t[]){1, 1}, &s2));
    const double w2[2] = {11, 19};
    assert_f64_values(s2, w2, 2);
    tf_tensor_release(s2);
    tf_tensor_release(s);
    /* The whole range is the tensor itself; start == limit gives extent 0. */
    TF_ASSERT_OK(tf_tensor_slice(t, (int64_t[]){0, 0}, (int64_t[]){4, 5}, (int64_t[]){1, 1}, &s));
    assert_true(tf_tensor_is_contiguous(s));
    tf_tensor_release(s);
    TF_ASSERT_OK(tf_tensor_slice(t, (int64_t[]){2, 0}, (int64_t[]){2, 5}, (int64_t[]){1, 1}, &s));
    assert_shape(s, 2, (int64_t[]){0, 5});
    assert_int_equal(tf_tensor_numel(s), 0);
    tf_tensor_release(s);
    TF_ASSERT_OK(tf_tensor_slice(t, (int64_t[]){4, 5}, (int64_t[]){4, 5}, (int64_t[]){3, 3}, &s));
    assert_int_equal(tf_tensor_numel(s), 0);
    tf_tensor_release(s);
    /* Stride larger than the range: one element. */
    TF_ASSERT_OK(tf_tensor_slice(t, (int64_t[]){3, 4}, (int64_t[]){4, 5}, (int64_t[]){9, 9}, &s));
    const double w3 = 19;
    assert_f64_values(s, &w3, 1);
    tf_tensor_release(s);

    ASSERT_FAILS(TF_ERR_OUT_OF_RANGE, out,
                 tf_tensor_slice(t, (int64_t[]){0, 0}, (int64_t[]){5, 5}, (int64_t[]){1, 1}, &out));
    ASSERT_FAILS(
        TF_ERR_OUT_OF_RANGE, out,
        tf_tensor_slice(t, (int64_t[]){-1, 0}, (int64_t[]){4, 5}, (int64_t[]){1, 1}, &out));
    ASSERT_FAILS(TF_ERR_OUT_OF_RANGE, out,
                 tf_tensor_slice(t, (int64_t[]){3, 0}, (int64_t[]){2, 5}, (int64_t[]){1, 1}, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out,
                 tf_tensor_slice(t, (int64_t[]){0, 0}, (int64_t[]){4, 5}, (int64_t[]){1, 0}, &out));
    ASSERT_FAILS(
        TF_ERR_VALIDATION, out,
        tf_tensor_slice(t, (int64_t[]){0, 0}, (int64_t[]){4, 5}, (int64_t[]){-1, 1}, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out,
                 tf_tensor_slice(t, NULL, (int64_t[]){4, 5}, (int64_t[]){1, 1}, &out));
    tf_tensor_release(t);
}

static void test_broadcast_in_dim(void **state)
{
    tf_tensor *x = iota_f64(1, (int64_t[]){3}, 1), *b = NULL, *out;
    /* [3] -> [3,4] along axis 0: out(i,j) = x(i) */
    TF_ASSERT_OK(tf_tensor_broadcast_in_dim(x, 2, (int64_t[]){3, 4}, (int[]){0}, &b));
    assert_strides(b, (int64_t[]){1, 0});
    assert_true(tf_tensor_shares_storage(b, x));
    const double w1[12] = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3};
    assert_f64_values(b, w1, 12);
    tf_tensor_release(b);
    /* [3] -> [2,3] along axis 1: out(i,j) = x(j) */
    TF_ASSERT_OK(tf_tensor_broadcast_in_dim(x, 2, (int64_t[]){2, 3}, (int[]){1}, &b));
    const double w2[6] = {1, 1, 2, 2, 3, 3};
    assert_f64_values(b, w2, 6);
    tf_tensor_release(b);
    /* An extent-1 input axis stretches. */
    tf_tensor *col = iota_f64(2, (int64_t[]){2, 1}, 5);
    TF_ASSERT_OK(tf_tensor_broadcast_in_dim(col, 3, (int64_t[]){2, 3, 2}, (int[]){0, 2}, &b));
    const double w3[12] = {5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 5, 6};
    assert_f64_values(b, w3, 12);
    tf_tensor_release(b);
    /* Same rank, identity dims: same values. */
    TF_ASSERT_OK(tf_tensor_broadcast_in_dim(col, 2, (int64_t[]){2, 1}, (int[]){0, 1}, &b));
    const double w4[2] = {5, 6};
    assert_f64_values(b, w4, 2);
    tf_tensor_release(b);
    /* Rank 0 -> anything. */
    tf_tensor *s = iota_f64(0, NULL, 9);
    int no_dims[1] = {0};
    TF_ASSERT_OK(tf_tensor_broadcast_in_dim(s, 2, (int64_t[]){2, 2}, no_dims, &b));
    const double w5[4] = {9, 9, 9, 9};
    assert_f64_values(b, w5, 4);
    tf_tensor_release(b);

    ASSERT_FAILS(TF_ERR_SHAPE_MISMATCH, out,
                 tf_tensor_broadcast_in_dim(x, 2, (int64_t[]){4, 2}, (int[]){0}, &out));
    ASSERT_FAILS(TF_ERR_AXIS_OUT_OF_BOUNDS, out,
                 tf_tensor_broadcast_in_dim(x, 2, (int64_t[]){3, 3}, (int[]){2}, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out,
                 tf_tensor_broadcast_in_dim(col, 2, (int64_t[]){1, 2}, (int[]){1, 0}, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out,
                 tf_tensor_broadcast_in_dim(col, 3, (int64_t[]){2, 2, 2}, (int[]){0, 0}, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out,
                 tf_tensor_broadcast_in_dim(x, 2, (int64_t[]){3, 4}, NULL, &out));
    /* Fewer output axes than input axes cannot work. */
    out = SENTINEL;
    assert_int_not_equal(tf_tensor_broadcast_in_dim(col, 1, (int64_t[]){2}, (int[]){0, 1}, &out),
                         TF_OK);
    assert_ptr_equal(out, SENTINEL);
    ASSERT_FAILS(TF_ERR_VALIDATION, out,
                 tf_tensor_broadcast_in_dim(x, 2, (int64_t[]){3, -1}, (int[]){0}, &out));
    tf_tensor_release(s);
    tf_tensor_release(col);
    tf_tensor_release(x);
}

static void test_reverse(void **state)
{
    tf_tensor *t = iota_f64(2, (int64_t[]){2, 3}, 0), *r = NULL, *rr = NULL, *out;
    TF_ASSERT_OK(tf_tensor_reverse(t, 1, (int[]){1}, &r));
    const double w1[6] = {4, 5, 2, 3, 0, 1};
    assert_f64_values(r, w1, 6);
    /* Reversing again restores the order. */
    TF_ASSERT_OK(tf_tensor_reverse(r, 1, (int[]){-1}, &rr));
    const double w0[6] = {0, 1, 2, 3, 4, 5};
    assert_f64_values(rr, w0, 6);
    tf_tensor_release(rr);
    tf_tensor_release(r);
    TF_ASSERT_OK(tf_tensor_reverse(t, 2, (int[]){0, 1}, &r));
    const double w2[6] = {5, 4, 3, 2, 1, 0};
    assert_f64_values(r, w2, 6);
    tf_tensor_release(r);
    TF_ASSERT_OK(tf_tensor_reverse(t, 0, NULL, &r));
    assert_f64_values(r, w0, 6);
    tf_tensor_release(r);
    /* Reverse of a slice. */
    tf_tensor *s = NULL;
    TF_ASSERT_OK(tf_tensor_slice(t, (int64_t[]){0, 1}, (int64_t[]){2, 3}, (int64_t[]){1, 1}, &s));
    TF_ASSERT_OK(tf_tensor_reverse(s, 1, (int[]){1}, &r));
    const double w3[4] = {4, 5, 2, 3};
    assert_f64_values(r, w3, 4);
    tf_tensor_release(r);
    tf_tensor_release(s);

    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_reverse(t, 2, (int[]){0, 0}, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_reverse(t, 2, (int[]){1, -1}, &out));
    ASSERT_FAILS(TF_ERR_AXIS_OUT_OF_BOUNDS, out, tf_tensor_reverse(t, 1, (int[]){2}, &out));
    ASSERT_FAILS(TF_ERR_AXIS_OUT_OF_BOUNDS, out, tf_tensor_reverse(t, 1, (int[]){-3}, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_reverse(t, 1, NULL, &out));
    tf_tensor_release(t);
}

static void test_diagonal(void **state)
{
    tf_tensor *sq = iota_f64(2, (int64_t[]){3, 3}, 0), *d = NULL, *out;
    TF_ASSERT_OK(tf_tensor_diagonal(sq, 0, 1, &d));
    assert_shape(d, 1, (int64_t[]){3});
    assert_strides(d, (int64_t[]){4});
    const double w1[3] = {0, 4, 8};
    assert_f64_values(d, w1, 3);
    tf_tensor_release(d);
    TF_ASSERT_OK(tf_tensor_diagonal(sq, -2, -1, &d));
    assert_f64_values(d, w1, 3);
    tf_tensor_release(d);
    TF_ASSERT_OK(tf_tensor_diagonal(sq, 1, 0, &d));
    assert_f64_values(d, w1, 3);
    tf_tensor_release(d);

    tf_tensor *wide = iota_f64(2, (int64_t[]){2, 3}, 0);
    TF_ASSERT_OK(tf_tensor_diagonal(wide, 0, 1, &d));
    const double w2[2] = {0, 3};
    assert_f64_values(d, w2, 2);
    tf_tensor_release(d);

    /* Rank 3 [2,3,4], axes 0 and 2: the remaining axis first, the diagonal last:
       out(j, k) = x(k, j, k) = k + 2j + 6k. */
    tf_tensor *cube = iota_f64(3, (int64_t[]){2, 3, 4}, 0);
    TF_ASSERT_OK(tf_tensor_diagonal(cube, 0, 2, &d));
    assert_shape(d, 2, (int64_t[]){3, 2});
    const double w3[6] = {0, 2, 4, 7, 9, 11};
    assert_f64_values(d, w3, 6);
    tf_tensor_release(d);

    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_diagonal(sq, 1, 1, &out));
    ASSERT_FAILS(TF_ERR_VALIDATION, out, tf_tensor_diagonal(sq, 0, -2, &out));
    ASSERT_FAILS(TF_ERR_AXIS_OUT_OF_BOUNDS, out, tf_tensor_diagonal(sq, 0, 2, &out));
    ASSERT_FAILS(TF_ERR_AXIS_OUT_OF_BOUNDS, out, tf_tensor_diagonal(sq, -3, 1, &out));
    tf_tensor *s = iota_f64(0, NULL, 0);
    ASSERT_FAILS(TF_ERR_AXIS_OUT_OF_BOUNDS, out, tf_tensor_diagonal(s, 0, 1, &out));
    tf_tensor_release(s);
    tf_tensor_release(cube);
    tf_tensor_release(wide);
    tf_tensor_release(sq);
}

static void test_zero_size_extents(void **state)
{
    const int64_t shapes[3][3] = {{0, 3, 2}, {3, 0, 2}, {2, 3, 0}};
    for (int i = 0; i < 3; i++) {
        tf_tensor *t = NULL, *v = NULL;
        TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 3, shapes[i], NULL, 0, &t));
        assert_int_equal(tf_tensor_numel(t), 0);
        assert_shape(t, 3, shapes[i]);
        const void *data;
        size_t count = 99;
        TF_ASSERT_OK(tf_tensor_data(t, TF_F32, &data, &count));
        assert_int_equal(count, 0);
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F32, NULL, 0));

        TF_ASSERT_OK(tf_tensor_transpose(t, (int[]){2, 1, 0}, &v));
        assert_shape(v, 3, (int64_t[]){shapes[i][2], shapes[i][1], shapes[i][0]});
        TF_ASSERT_OK(tf_tensor_copy_to_host(v, TF_F32, NULL, 0));
        tf_tensor_release(v);
        TF_ASSERT_OK(tf_tensor_reshape(t, 2, (int64_t[]){0, 17}, &v));
        tf_tensor_release(v);
        TF_ASSERT_OK(tf_tensor_reverse(t, 3, (int[]){0, 1, 2}, &v));
        assert_int_equal(tf_tensor_numel(v), 0);
        tf_tensor_release(v);
        TF_ASSERT_OK(tf_tensor_slice(t, (int64_t[]){0, 0, 0}, shapes[i], (int64_t[]){2, 2, 2}, &v));
        assert_int_equal(tf_tensor_numel(v), 0);
        tf_tensor_release(v);
        TF_ASSERT_OK(tf_tensor_diagonal(t, 0, 1, &v));
        assert_int_equal(tf_tensor_numel(v), 0);
        tf_tensor_release(v);
        TF_ASSERT_OK(tf_tensor_broadcast_in_dim(
            t, 4, (int64_t[]){shapes[i][0], shapes[i][1], shapes[i][2], 5}, (int[]){0, 1, 2}, &v));
        assert_int_equal(tf_tensor_numel(v), 0);
        tf_tensor_release(v);
        /* No element is addressed, so no stride can leave the storage. */
        TF_ASSERT_OK(tf_tensor_view(t, 2, (int64_t[]){0, 1000}, (int64_t[]){1000, 1000}, 0, &v));
        assert_int_equal(tf_tensor_numel(v), 0);
        tf_tensor_release(v);
        tf_tensor_release(t);
    }
    /*
     * With a zero extent the element count is 0 whatever the other extents
     * are; creating it must not overflow anywhere (the sanitizer build traps
     * signed overflow in, e.g., computing dense strides 2^40 * 2^40 * 2^40).
     */
    const int64_t big = (int64_t)1 << 40;
    tf_tensor *z = SENTINEL;
    tf_status st = tf_tensor_from_host(TF_F32, 4, (int64_t[]){0, big, big, big}, NULL, 0, &z);
    if (st == TF_OK) {
        assert_int_equal(tf_tensor_numel(z), 0);
        tf_tensor_release(z);
    } else {
        assert_int_equal(st, TF_ERR_SHAPE_OVERFLOW);
        assert_ptr_equal(z, SENTINEL);
    }
    /* A zero-size wrap borrows nothing the library reads, but still releases once. */
    release_log log = {0};
    float dummy;
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_wrap_host(TF_F32, 1, (int64_t[]){0}, &dummy, 0, on_release, &log, &t));
    tf_tensor_release(t);
    assert_int_equal(log.calls, 1);
}

/*
 * Found by tests/fuzz/fuzz_shapes: an empty tensor's other extents, and an
 * empty view's strides and offset, may be anything, so no code may do
 * arithmetic on them (signed overflow, trapped by the sanitizer build); and
 * a slice stride that steps past the end is fine on a strided view.
 */
static void test_empty_views_with_extreme_extents(void **state)
{
    /* the zero extent last: the product before it overflows */
    tf_tensor *t = NULL, *v = NULL, *w = NULL;
    const int64_t huge = ((int64_t)1 << 62) + 1;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 3, (int64_t[]){3, huge, 0}, NULL, 0, &t));
    assert_int_equal(tf_tensor_numel(t), 0);
    assert_true(tf_tensor_is_contiguous(t));

    /* an empty view with the most extreme strides and offset */
    TF_ASSERT_OK(tf_tensor_view(t, 2, (int64_t[]){INT64_MAX, 0}, (int64_t[]){INT64_MIN, INT64_MIN},
                                INT64_MIN, &v));
    const void *data = NULL;
    size_t count = 99;
    TF_ASSERT_OK(tf_tensor_data(v, TF_F32, &data, &count));
    assert_int_equal(count, 0);
    TF_ASSERT_OK(tf_tensor_reverse(v, 2, (int[]){0, 1}, &w));
    assert_int_equal(tf_tensor_numel(w), 0);
    tf_tensor_release(w);
    TF_ASSERT_OK(tf_tensor_diagonal(v, 0, 1, &w));
    assert_int_equal(tf_tensor_numel(w), 0);
    tf_tensor_release(w);
    TF_ASSERT_OK(tf_tensor_slice(v, (int64_t[]){0, 0}, (int64_t[]){INT64_MAX, 0},
                                 (int64_t[]){INT64_MAX, INT64_MAX}, &w));
    assert_int_equal(tf_tensor_numel(w), 0);
    tf_tensor_release(w);
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open(DEVMEM_PATH, 0, &e));
    TF_ASSERT_OK(tf_engine_upload(e, v, &w));
    assert_int_equal(tf_tensor_numel(w), 0);
    tf_tensor_release(w);
    tf_engine_destroy(e);
    tf_tensor_release(v);
    tf_tensor_release(t);

    /* every other element of 0..5, then a stride far past the end: one element */
    t = iota_f64(1, (int64_t[]){6}, 0.0);
    TF_ASSERT_OK(tf_tensor_view(t, 1, (int64_t[]){3}, (int64_t[]){2}, 1, &v));
    TF_ASSERT_OK(tf_tensor_slice(v, (int64_t[]){1}, (int64_t[]){3}, (int64_t[]){INT64_MAX}, &w));
    assert_shape(w, 1, (int64_t[]){1});
    assert_f64_values(w, (double[]){3.0}, 1);
    tf_tensor_release(w);
    tf_tensor_release(v);

    /* axes of one element may have any stride: diagonal and reverse must not
       do arithmetic with them */
    TF_ASSERT_OK(
        tf_tensor_view(t, 3, (int64_t[]){1, 1, 3}, (int64_t[]){INT64_MAX, INT64_MIN, 2}, 0, &v));
    TF_ASSERT_OK(tf_tensor_diagonal(v, 0, 1, &w));
    assert_shape(w, 2, (int64_t[]){3, 1});
    assert_f64_values(w, (double[]){0.0, 2.0, 4.0}, 3);
    tf_tensor_release(w);
    TF_ASSERT_OK(tf_tensor_reverse(v, 2, (int[]){1, 2}, &w));
    assert_f64_values(w, (double[]){4.0, 2.0, 0.0}, 3);
    tf_tensor_release(w);
    tf_tensor_release(v);
    tf_tensor_release(t);
}

static void test_retain_release_balance(void **state)
{
    size_t before = tf_test_alloc_live_blocks();
    tf_tensor *t = iota_f64(1, (int64_t[]){4}, 0), *v = NULL;
    assert_true(tf_test_alloc_live_blocks() > before);
    for (int i = 0; i < 3; i++)
        tf_tensor_retain(t);
    for (int i = 0; i < 3; i++)
        tf_tensor_release(t);
    const double w[4] = {0, 1, 2, 3};
    assert_f64_values(t, w, 4);
    /* A view keeps the storage alive after the base goes. */
    TF_ASSERT_OK(tf_tensor_reverse(t, 1, (int[]){0}, &v));
    tf_tensor_release(t);
    const double wr[4] = {3, 2, 1, 0};
    assert_f64_values(v, wr, 4);
    tf_tensor_release(v);
    assert_int_equal(tf_test_alloc_live_blocks(), before);
}

/* ---- out of memory ---- */

/*
 * Runs `call` with the nth allocation failing, for n = 1, 2, ... until the
 * call no longer allocates n times. Every injected failure must come back as
 * TF_ERR_OUT_OF_MEMORY with *out untouched and nothing leaked.
 */
#define OOM_SWEEP(out, call, on_success)                                    \
    do {                                                                    \
        int finished_ = 0;                                                  \
        for (size_t n_ = 1; n_ < 64 && !finished_; n_++) {                  \
            size_t blocks_ = tf_test_alloc_live_blocks();                   \
            (out) = SENTINEL;                                               \
            tf_test_alloc_fail_at(n_, 0);                                   \
            tf_status st_ = (call);                                         \
            size_t injected_ = tf_test_alloc_injected();                    \
            tf_test_alloc_fail_at(0, 0);                                    \
            if (injected_ == 0) {                                           \
                TF_ASSERT_OK(st_);                                          \
                assert_true(n_ > 1); /* the call allocates at least once */ \
                on_success;                                                 \
                finished_ = 1;                                              \
            } else {                                                        \
                if (st_ != TF_ERR_OUT_OF_MEMORY)                            \
                    fail_msg("allocation %zu failing: %s gave %s, want "    \
                             "TF_ERR_OUT_OF_MEMORY",                        \
                             n_, #call, tf_status_name(st_));               \
                assert_ptr_equal((out), SENTINEL);                          \
                assert_int_equal(tf_error_status(), TF_ERR_OUT_OF_MEMORY);  \
                assert_int_equal(tf_test_alloc_live_blocks(), blocks_);     \
            }                                                               \
        }                                                                   \
        assert_true(finished_);                                             \
    } while (0)

static void test_out_of_memory(void **state)
{
    double x[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    tf_tensor *out;
    OOM_SWEEP(out, tf_tensor_from_host(TF_F64, 2, shape, x, 6, &out), {
        assert_f64_values(out, x, 6);
        tf_tensor_release(out);
    });
    /* Every allocation failing. */
    tf_test_alloc_fail_at(1, 1);
    ASSERT_FAILS(TF_ERR_OUT_OF_MEMORY, out, tf_tensor_from_host(TF_F64, 2, shape, x, 6, &out));
    tf_test_alloc_fail_at(0, 0);

    release_log log = {0};
    OOM_SWEEP(out, tf_tensor_wrap_host(TF_F64, 2, shape, x, 6, on_release, &log, &out), {
        assert_int_equal(log.calls, 0);
        tf_tensor_release(out);
    });
    assert_int_equal(log.calls, 1); /* once: for the successful wrap only */

    tf_tensor *t = iota_f64(2, shape, 0);
    OOM_SWEEP(out, tf_tensor_view(t, 1, (int64_t[]){3}, (int64_t[]){2}, 0, &out),
              tf_tensor_release(out));
    OOM_SWEEP(out, tf_tensor_transpose(t, (int[]){1, 0}, &out), tf_tensor_release(out));
    OOM_SWEEP(out, tf_tensor_reshape(t, 1, (int64_t[]){6}, &out), tf_tensor_release(out));
    OOM_SWEEP(out,
              tf_tensor_slice(t, (int64_t[]){0, 0}, (int64_t[]){1, 3}, (int64_t[]){1, 1}, &out),
              tf_tensor_release(out));
    OOM_SWEEP(out, tf_tensor_reverse(t, 1, (int[]){0}, &out), tf_tensor_release(out));
    OOM_SWEEP(out, tf_tensor_diagonal(t, 0, 1, &out), tf_tensor_release(out));
    OOM_SWEEP(out, tf_tensor_broadcast_in_dim(t, 3, (int64_t[]){2, 3, 2}, (int[]){0, 1}, &out),
              tf_tensor_release(out));

    /* Device memory: the engine's buffer_alloc goes through the same allocator. */
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open(DEVMEM_PATH, 0, &e));
    OOM_SWEEP(out, tf_engine_upload(e, t, &out), tf_tensor_release(out));
    tf_tensor *d = NULL;
    TF_ASSERT_OK(tf_engine_upload(e, t, &d));
    OOM_SWEEP(out, tf_engine_download(e, d, &out), {
        assert_f64_values(out, (const double[]){0, 1, 2, 3, 4, 5}, 6);
        tf_tensor_release(out);
    });
    tf_tensor_release(d);
    tf_engine_destroy(e);
    tf_tensor_release(t);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    /* Before any other library call: the allocator sees every byte. */
    tf_test_alloc_install();
    /*
     * Load the devmem plugin once up front: a loaded plugin stays for the life
     * of the process, so its bookkeeping is not a leak of whichever test
     * happens to load it first.
     */
    tf_plugin *devmem = NULL;
    if (tf_plugin_load(DEVMEM_PATH, &devmem) != TF_OK) {
        fprintf(stderr, "cannot load %s: %s (cause: %s)\n", DEVMEM_PATH, tf_error_message(),
                tf_error_cause());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        T(test_every_dtype),
        T(test_rank0),
        T(test_ranks_up_to_max),
        T(test_element_count_mismatch),
        T(test_shape_overflow),
        T(test_negative_extent),
        T(test_bad_dtype_and_null_pointers),
        T(test_strided_views_are_not_slices),
        T(test_copy_to_host_errors),
        T(test_device_memory_is_not_host_memory),
        T(test_device_round_trip_all_dtypes),
        T(test_plugin_allocations_are_counted),
        T(test_wrap_host_borrows),
        T(test_from_host_copies),
        T(test_column_major),
        T(test_view_broadcast_strides),
        T(test_view_negative_strides),
        T(test_view_offsets_and_bounds),
        T(test_reshape),
        T(test_transpose),
        T(test_slice),
        T(test_broadcast_in_dim),
        T(test_reverse),
        T(test_diagonal),
        T(test_zero_size_extents),
        T(test_empty_views_with_extreme_extents),
        T(test_retain_release_balance),
        T(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
