/*
 * test_cpu_blas_threads.c - the CPU engine's use of OpenBLAS's process-global
 * thread count (plugins/cpu/cpu_dot.c, "Threads").
 *
 * A threaded engine hands one large product to OpenBLAS's own threads and
 * runs everything else single-threaded on its pool. Checked here:
 *  - a product above the handoff size, one batch and a few batches, f32 and
 *    f64, on a threaded engine against a serial one and a reference;
 *  - OpenBLAS's count is one again after a handoff, and a count raised by
 *    another user of the library is set back before a single-threaded gemm;
 *  - large (handed off), mid-size (split on the pool) and small (serial
 *    engine) products issued at once from three threads all come out right,
 *    and none of them leaves the count raised (label concurrency: also run
 *    under ThreadSanitizer).
 */
#include <cblas.h>
#include <math.h>
#include <pthread.h>

#include "tf_ref.h"

static tf_engine *serial, *threaded, *threaded2;
static tf_engine **const engines[] = {&serial, &threaded, &threaded2};

static int open_engines(void **state)
{
    (void)state;
    return tfr_engines_open("cpu", (const int[]){1, 2, 3}, engines, 3);
}

static int close_engines(void **state)
{
    (void)state;
    return tfr_engines_destroy(engines, 3);
}

/* One batched product C[m,n,b] = A[m,k,b] * B[k,n,b] with inputs, reference and bound. */
typedef struct product {
    tf_dtype dtype;
    int64_t m, n, k, batch;
    tfr_input a, b;
    tf_scalar *want;
    double *extra;
} product;

static void product_make(product *p, tf_dtype dtype, int64_t m, int64_t n, int64_t k,
                         int64_t batch, uint64_t seed)
{
    p->dtype = dtype;
    p->m = m, p->n = n, p->k = k, p->batch = batch;
    tfr_rng rng;
    tfr_rng_seed(&rng, seed);
    tfr_gen g = {TFR_UNIFORM, -1.0, 1.0};
    int64_t as[3] = {m, k, batch}, bs[3] = {k, n, batch};
    tfr_input_make(&p->a, &rng, serial, dtype, 3, as, TFR_DENSE, &g);
    tfr_input_make(&p->b, &rng, serial, dtype, 3, bs, TFR_TRANSPOSED, &g);
    size_t total = (size_t)(m * n * batch);
    p->want = tfr_vals_alloc(total);
    p->extra = calloc(total, sizeof *p->extra);
    assert_non_null(p->extra);
    const double eps = dtype == TF_F32 ? 0x1p-24 : 0x1p-53;
    for (int64_t bi = 0; bi < batch; bi++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                double sum = 0.0, mag = 0.0;
                for (int64_t q = 0; q < k; q++) {
                    double x = p->a.vals[i + m * q + m * k * bi].f * p->b.vals[q + k * j + k * n * bi].f;
                    sum += x;
                    mag += fabs(x);
                }
                size_t at = (size_t)(i + m * j + m * n * bi);
                p->want[at] = tfr_norm(dtype, tfr_f(sum));
                p->extra[at] = 3.0 * (double)(k + 1) * eps * mag;
            }
}

static void product_free(product *p)
{
    tfr_input_free(&p->a);
    tfr_input_free(&p->b);
    free(p->want);
    free(p->extra);
}

static const tf_dot_general_params k_batched = {sizeof k_batched, 1, 1, 0, {1}, {0}, {2}, {2}, 0, 0};

/* Runs the product on `engine`; returns TF_OK and *got (the output's values) or the status. */
static tf_status product_run(const product *p, tf_engine *engine, tf_scalar **got)
{
    int64_t os[3] = {p->m, p->n, p->batch};
    tf_tensor *out = NULL;
    tf_status st = tf_tensor_empty(engine, p->dtype, 3, os, &out);
    tf_tensor *in[2] = {p->a.t, p->b.t};
    if (st == TF_OK)
        st = tf_engine_execute(engine, TF_PRIM_DOT_GENERAL, &k_batched, 2, in, 1, &out);
    if (st == TF_OK)
        *got = tfr_read(out);
    tf_tensor_release(out);
    return st;
}

/* Whether every value is within the bound of the reference (no cmocka call: any thread). */
static int product_close(const product *p, const tf_scalar *got)
{
    size_t total = (size_t)(p->m * p->n * p->batch);
    for (size_t i = 0; i < total; i++)
        if (!tfr_close(p->dtype, got[i], p->want[i], p->extra[i], tfr_tol_default(p->dtype)))
            return 0;
    return 1;
}

static void check_product(const char *what, const product *p, tf_engine *engine)
{
    tf_scalar *got = NULL;
    tf_status st = product_run(p, engine, &got);
    if (st != TF_OK)
        fail_msg("%s: %s (%s)", what, tf_status_name(st), tf_error_message());
    tfr_check(what, p->dtype, (size_t)(p->m * p->n * p->batch), got, p->want, p->extra,
              tfr_tol_default(p->dtype));
    free(got);
}

/* Products above the handoff size (2^24 multiply-adds per batch) on a threaded engine. */
static void test_handoff(void **state)
{
    (void)state;
    product p;
    product_make(&p, TF_F64, 300, 280, 260, 1, 701); /* 21.8 M multiply-adds */
    check_product("f64 300x280x260 on 2 threads", &p, threaded);
    check_product("f64 300x280x260 serial", &p, serial);
    assert_int_equal(openblas_get_num_threads(), 1);
    product_free(&p);

    product_make(&p, TF_F32, 260, 300, 270, 2, 702); /* 2 batches < 3 threads: handed off */
    check_product("f32 2 x 260x300x270 on 3 threads", &p, threaded2);
    check_product("f32 2 x 260x300x270 on 2 threads (pool, one batch each)", &p, threaded);
    assert_int_equal(openblas_get_num_threads(), 1);
    product_free(&p);
}

/*
 * Products split on the pool (2^21 to 2^24 multiply-adds per batch): into blocks of
 * whole columns of C while N allows, then along M, and along M alone when N is too
 * short to cut (cpu_dot.c, gemm_split).
 */
static void test_pool_tiles(void **state)
{
    (void)state;
    product p;
    product_make(&p, TF_F32, 784, 256, 64, 1, 707); /* the mlp's dW1, 12.8 M */
    check_product("f32 784x256x64 on 2 threads (2 column blocks)", &p, threaded);
    check_product("f32 784x256x64 on 3 threads (3 column blocks)", &p, threaded2);
    check_product("f32 784x256x64 serial", &p, serial);
    product_free(&p);

    /* N 100: too short for two column blocks of 64 */
    product_make(&p, TF_F64, 700, 100, 64, 1, 708);
    check_product("f64 700x100x64 on 2 threads (2 row blocks)", &p, threaded);
    check_product("f64 700x100x64 on 3 threads (3 row blocks)", &p, threaded2);
    check_product("f64 700x100x64 serial", &p, serial);
    product_free(&p);
    assert_int_equal(openblas_get_num_threads(), 1);
}

/* Another user of libopenblas raised the count: the next single-threaded gemm sets it back. */
static void test_count_set_back(void **state)
{
    (void)state;
    product p;
    product_make(&p, TF_F64, 96, 80, 70, 3, 703);
    openblas_set_num_threads(2);
    check_product("f64 3 x 96x80x70 serial after the count was raised", &p, serial);
    assert_int_equal(openblas_get_num_threads(), 1);
    openblas_set_num_threads(2);
    check_product("f64 3 x 96x80x70 on 2 threads after the count was raised", &p, threaded);
    assert_int_equal(openblas_get_num_threads(), 1);
    product_free(&p);
}

/* ---- three threads at once ---------------------------------------------------- */

typedef struct worker {
    const product *p;
    tf_engine *engine;
    int rounds;
    int failures; /* rounds with an error or a wrong value */
    pthread_t thread;
} worker;

static void *worker_run(void *arg)
{
    worker *w = arg;
    for (int r = 0; r < w->rounds; r++) {
        tf_scalar *got = NULL;
        if (product_run(w->p, w->engine, &got) != TF_OK || !product_close(w->p, got))
            w->failures++;
        free(got);
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    product large, mid, small;
    product_make(&large, TF_F32, 280, 260, 240, 1, 704); /* handed off */
    product_make(&mid, TF_F64, 200, 150, 120, 1, 705);   /* split on the pool */
    product_make(&small, TF_F64, 40, 30, 20, 2, 706);    /* serial engine */
    worker w[3] = {{&large, threaded, 6, 0, 0},
                   {&mid, threaded2, 12, 0, 0},
                   {&small, serial, 60, 0, 0}};
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&w[i].thread, NULL, worker_run, &w[i]), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_join(w[i].thread, NULL), 0);
    for (int i = 0; i < 3; i++)
        if (w[i].failures)
            fail_msg("worker %d: %d of %d rounds failed or were wrong", i, w[i].failures,
                     w[i].rounds);
    assert_int_equal(openblas_get_num_threads(), 1);
    product_free(&large);
    product_free(&mid);
    product_free(&small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handoff),
        cmocka_unit_test(test_pool_tiles),
        cmocka_unit_test(test_count_set_back),
        cmocka_unit_test(test_concurrent),
    };
    return cmocka_run_group_tests(tests, open_engines, close_engines);
}
