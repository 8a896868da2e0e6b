/*
 * test_demo_train.c - `tenferro demo` with the training library: --save and
 * --resume give the same bits as a run that never stopped, the run under
 * `mpirun -np 4` (each rank a shard) ends with the parameters of the run in
 * one process and prints from rank 0 only, and the refusals of --resume.
 *
 * The checkpoints the demo writes are compared as files (byte for byte) and
 * read back with checkpoint.h (parameters within rounding).
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tenferro/checkpoint.h>

#include "tf_test_run.h"
#include "train_test.h"

static char g_dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/tf-demo-XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Runs `tenferro demo ARGS` (prefix: e.g. mpirun), returns the status; *out its stdout. */
static int demo(const char *prefix, const char *args, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s %s demo %s", g_dir, prefix, TF_CLI_PATH, args);
    return tf_test_run(cmd, out);
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static int same_file(const char *a, const char *b)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cd '%s' && cmp -s '%s' '%s'", g_dir, a, b);
    return system(cmd) == 0;
}

static void test_resume_is_bit_identical(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(demo("", "--epochs 300 --save straight.st", &out), 0);
    free(out);
    assert_int_equal(demo("", "--epochs 120 --save half.st 2>&1", &out), 1); /* not trained yet */
    free(out);
    assert_int_equal(demo("", "--epochs 300 --resume half.st --save resumed.st", &out), 0);
    assert_non_null(strstr(out, "resumed from half.st after epoch 120"));
    assert_null(strstr(out, "epoch 100/")); /* the epochs before the checkpoint are not rerun */
    assert_non_null(strstr(out, "epoch 300/300"));
    free(out);
    assert_true(same_file("straight.st", "resumed.st"));
    /* twice in a row from the same file: the same again */
    assert_int_equal(demo("", "--epochs 300 --resume half.st --save again.st", &out), 0);
    free(out);
    assert_true(same_file("resumed.st", "again.st"));
}

static void test_mpirun_matches_one_process(void **state)
{
    (void)state;
#ifndef TF_MPIEXEC
    print_message("skipped: the dist module is not built (no MPI)\n");
    skip();
#else
    char *out, prefix[256];
    snprintf(prefix, sizeof prefix,
             "TENFERRO_DIST_TIMEOUT=60 %s --allow-run-as-root --oversubscribe -np 4", TF_MPIEXEC);
    assert_int_equal(demo(prefix, "--epochs 160 --save ranks4.st", &out), 0);
    assert_int_equal(count_of(out, "training a "), 1);   /* rank 0 alone prints */
    assert_int_equal(count_of(out, "4 ranks, 128 points each"), 1);
    assert_int_equal(count_of(out, "final accuracy"), 1);
    free(out);
    assert_int_equal(demo("", "--epochs 160 --save ranks1.st", &out), 0);
    free(out);
    char a[128], b[128];
    snprintf(a, sizeof a, "%s/ranks4.st", g_dir);
    snprintf(b, sizeof b, "%s/ranks1.st", g_dir);
    tf_checkpoint *ca = NULL, *cb = NULL;
    TF_ASSERT_OK(tf_checkpoint_load(a, NULL, &ca));
    TF_ASSERT_OK(tf_checkpoint_load(b, NULL, &cb));
    assert_string_equal(tf_checkpoint_meta(ca, "optim.steps"), "160");
    for (size_t i = 0; i < tf_checkpoint_count(cb); i++) {
        const tf_tensor *x = tf_checkpoint_tensor(cb, i);
        const tf_tensor *y = tf_checkpoint_find(ca, tf_checkpoint_name(cb, i));
        assert_non_null(y);
        size_t n = tf_tensor_numel(x);
        double *u = malloc(n * sizeof *u), *v = malloc(n * sizeof *v);
        trt_read(x, u, n);
        trt_read(y, v, n);
        trt_expect_close(tf_checkpoint_name(cb, i), v, u, n, 1e-9);
        free(u);
        free(v);
    }
    tf_checkpoint_destroy(ca);
    tf_checkpoint_destroy(cb);
#endif
}

static void test_resume_refusals(void **state)
{
    (void)state;
    char *out;
    assert_int_equal(demo("", "--epochs 10 --save ten.st", &out), 1);
    free(out);
    assert_int_equal(demo("", "--epochs 10 --resume ten.st 2>&1", &out), 1);
    assert_non_null(strstr(out, "has 10 epochs done"));
    free(out);
    assert_int_equal(demo("", "--resume missing.st 2>&1", &out), 1);
    assert_non_null(strstr(out, "cannot open"));
    free(out);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cd '%s' && head -c 100 ten.st > cut.st", g_dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(demo("", "--epochs 20 --resume cut.st 2>&1", &out), 1);
    assert_non_null(strstr(out, "checkpoint_load"));
    assert_null(strstr(out, "final accuracy"));
    free(out);
    assert_int_equal(demo("", "--save 2>&1", &out), 2);
    assert_non_null(strstr(out, "usage"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_is_bit_identical),
        cmocka_unit_test(test_mpirun_matches_one_process),
        cmocka_unit_test(test_resume_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
