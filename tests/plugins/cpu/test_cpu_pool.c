/*
 * test_cpu_pool.c - the CPU engine's worker pool as its waits change: workers that
 * sleep at once (spin_us = 0), that spin longer than the test runs (spin_us =
 * 1000000), and the default, whose workers are caught both spinning and asleep
 * by jobs that come back to back or after a pause. Every job's output must be
 * bit for bit the serial engine's, an error found by a worker must reach the
 * calling thread, and destroying an engine whose workers spin must not wait for
 * their spin to end. Labelled concurrency: CI also runs it under ThreadSanitizer.
 */
#define _POSIX_C_SOURCE 200809L

#include <string.h>
#include <time.h>

#include "tf_ref.h"

/* 2^14 elements: four pieces of a division (CPU_GRAIN_COSTLY), so both threads work. */
#define N (1 << 14)
#define JOBS 200

enum {
    SLEEPY,
    SPINNING,
    DEFAULT,
    NPOOLED
};

static tf_engine *serial, *pooled[NPOOLED];

static void pause_us(long us)
{
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

static int open_engines(void **state)
{
    (void)state;
    serial = tfr_engine_open("cpu", 1);
    if (tfr_engine_create("cpu", 2, "spin_us", "0", &pooled[SLEEPY]) != TF_OK ||
        tfr_engine_create("cpu", 2, "spin_us", "1000000", &pooled[SPINNING]) != TF_OK ||
        tfr_engine_create("cpu", 2, NULL, NULL, &pooled[DEFAULT]) != TF_OK) {
        print_error("cannot create the pooled engines: %s\n", tf_error_message());
        return -1;
    }
    return 0;
}

static int close_engines(void **state)
{
    (void)state;
    tf_engine_destroy(serial);
    for (int i = 0; i < NPOOLED; i++)
        tf_engine_destroy(pooled[i]);
    return 0;
}

/* out = a / b on `engine`; returns out's values (the caller frees them). */
static tf_scalar *div_on(tf_engine *engine, tf_tensor *a, tf_tensor *b)
{
    const int64_t shape[1] = {N};
    tf_binary_params bp = {sizeof bp, TF_BINARY_DIV};
    tf_tensor *in[2] = {a, b};
    tf_tensor *out = tfr_output(engine, TF_F32, 1, shape);
    tfr_exec_ok("div f32", engine, TF_PRIM_BINARY, &bp, 2, in, 1, &out);
    tf_scalar *v = tfr_read(out);
    tf_tensor_release(out);
    return v;
}

/* JOBS quotients on each pooled engine, back to back and after pauses longer than the
   default spin, each equal bit for bit to the serial engine's. */
static void test_pool_waits(void **state)
{
    (void)state;
    const int64_t shape[1] = {N};
    tfr_rng rng;
    tfr_rng_seed(&rng, 907);
    tf_scalar *va = tfr_vals_alloc(N), *vb = tfr_vals_alloc(N);
    for (size_t i = 0; i < N; i++) {
        va[i] = tfr_f(tfr_rng_real(&rng, -2, 2));
        vb[i] = tfr_f(tfr_rng_real(&rng, 0.5, 2));
    }
    tf_tensor *a = tfr_host(TF_F32, 1, shape, va), *b = tfr_host(TF_F32, 1, shape, vb);
    tf_scalar *want = div_on(serial, a, b);
    for (int k = 0; k < NPOOLED; k++) {
        for (int j = 0; j < JOBS; j++) {
            if (j % 8 == 7)
                pause_us(400); /* past the default spin: its workers go to sleep */
            tf_scalar *got = div_on(pooled[k], a, b);
            if (memcmp(got, want, sizeof *got * N) != 0)
                fail_msg("engine %d, job %d: the pooled quotient differs from the serial one", k,
                         j);
            free(got);
        }
    }
    free(want);
    tf_tensor_release(a);
    tf_tensor_release(b);
    free(va);
    free(vb);
}

/* An i32 division by zero in the second half (a worker's piece) fails the call on the
   calling thread, on every pooled engine, again and again, and the next job runs. */
static void test_pool_worker_errors(void **state)
{
    (void)state;
    const int64_t shape[1] = {N};
    tf_scalar *v = tfr_vals_alloc(N), *w = tfr_vals_alloc(N);
    for (size_t i = 0; i < N; i++) {
        v[i] = tfr_i((int64_t)(i % 1000));
        w[i] = tfr_i(7);
    }
    w[N - 3] = tfr_i(0);
    tf_tensor *in[2] = {tfr_host(TF_I32, 1, shape, v), tfr_host(TF_I32, 1, shape, w)};
    tf_binary_params div = {sizeof div, TF_BINARY_DIV};
    for (int k = 0; k < NPOOLED; k++) {
        for (int j = 0; j < 6; j++) {
            tf_tensor *out = tfr_output(pooled[k], TF_I32, 1, shape);
            tf_status st = tf_engine_execute(pooled[k], TF_PRIM_BINARY, &div, 2, in, 1, &out);
            if (st != TF_ERR_VALIDATION || strstr(tf_error_cause(), "zero") == NULL)
                fail_msg("engine %d, try %d: got %s (\"%s\"), want a division by zero", k, j,
                         tf_status_name(st), tf_error_cause());
            tf_tensor_release(out);
            if (j % 2)
                pause_us(400);
        }
    }
    tf_tensor_release(in[0]);
    tf_tensor_release(in[1]);
    free(v);
    free(w);
}

/* Engines made and destroyed while their workers spin (1 s each): destroy stops the spin. */
static void test_pool_destroy_while_spinning(void **state)
{
    (void)state;
    const int64_t shape[1] = {N};
    tf_scalar *v = tfr_vals_alloc(N);
    for (size_t i = 0; i < N; i++)
        v[i] = tfr_f((double)(i % 17 + 1));
    tf_tensor *a = tfr_host(TF_F32, 1, shape, v);
    for (int r = 0; r < 4; r++) {
        tf_engine *e = NULL;
        TF_ASSERT_OK(tfr_engine_create("cpu", 2, "spin_us", "1000000", &e));
        free(div_on(e, a, a)); /* the worker now spins for a second */
        tf_engine_destroy(e);
    }
    tf_tensor_release(a);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_waits),
        cmocka_unit_test(test_pool_worker_errors),
        cmocka_unit_test(test_pool_destroy_while_spinning),
    };
    return cmocka_run_group_tests_name("cpu pool waits", tests, open_engines, close_engines);
}
