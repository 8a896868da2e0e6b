/*
 * test_checkpoint_interop.c - tenferro's safetensors files read by an
 * independent reader, and that reader's files read by tenferro.
 *
 * The other side is tests/train/safetensors_interop.py, run with
 * /usr/bin/python3 and only its standard library (struct, json): it checks
 * a file written here element by element in row-major order (what a
 * PyTorch user sees), and writes one (names in alphabetical order, no
 * padding, unaligned data, \u escapes) that is loaded and checked here. Both
 * tests are skipped, saying so, when /usr/bin/python3 is absent.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <tenferro/checkpoint.h>

#include "train_test.h"

#define PYTHON "/usr/bin/python3"
#define N_EXPECTED 7 /* the tensors both sides agree on */

static char g_dir[64];

static int setup(void **state)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/tf-ckpy-XXXXXX");
    return mkdtemp(g_dir) ? tft_cpu_setup(state) : -1;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? tft_cpu_teardown(state) : -1;
}

static void need_python(void)
{
    if (access(PYTHON, X_OK) != 0) {
        print_message("skipped: " PYTHON " is absent; the interop check needs it\n");
        skip();
    }
}

static int run_script(const char *mode, const char *path)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, PYTHON " '%s' %s '%s'", TF_INTEROP_SCRIPT, mode, path);
    return system(cmd);
}

/* The agreed contents, in column-major order for tenferro. */
static void add_expected(tf_checkpoint *ck)
{
    double grid[6];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            grid[i + 2 * j] = 10 * i + j + 0.5;
    float cube[6];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++)
            cube[i + 3 * k] = (float)(100 * i + k);
    const int32_t counts[4] = {-3, 4, 11, 18};
    const int64_t big = ((int64_t)1 << 40) + 1;
    unsigned char mask[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            mask[i + 2 * j] = (i + j) % 2 == 0;
    float wave[8]; /* (re, im) pairs */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            wave[2 * (i + 2 * j)] = (float)i + 0.5f;
            wave[2 * (i + 2 * j) + 1] = (float)j - 1.0f;
        }
    tf_tensor *t[N_EXPECTED] = {
        tft_host(TF_F64, 2, (const int64_t[]){2, 3}, grid, 6),
        tft_host(TF_F32, 3, (const int64_t[]){3, 1, 2}, cube, 6),
        tft_host(TF_I32, 1, (const int64_t[]){4}, counts, 4),
        tft_host(TF_I64, 0, NULL, &big, 1),
        tft_host(TF_BOOL, 2, (const int64_t[]){2, 2}, mask, 4),
        tft_host(TF_F64, 2, (const int64_t[]){0, 4}, NULL, 0),
        tft_host(TF_C64, 2, (const int64_t[]){2, 2}, wave, 4),
    };
    static const char *const names[N_EXPECTED] = {"grid", "cube",  "counts", "big",
                                                  "mask", "empty", "wave"};
    for (int i = 0; i < N_EXPECTED; i++) {
        TF_ASSERT_OK(tf_checkpoint_add(ck, names[i], t[i]));
        tf_tensor_release(t[i]);
    }
    TF_ASSERT_OK(tf_checkpoint_set_meta(ck, "step", "7"));
    TF_ASSERT_OK(tf_checkpoint_set_meta(ck, "note", "caf\xc3\xa9"));
}

static void test_python_reads_our_file(void **state)
{
    (void)state;
    need_python();
    tf_checkpoint *ck = NULL;
    TF_ASSERT_OK(tf_checkpoint_create(&ck));
    add_expected(ck);
    char path[128];
    snprintf(path, sizeof path, "%s/ours.safetensors", g_dir);
    TF_ASSERT_OK(tf_checkpoint_save(ck, path));
    tf_checkpoint_destroy(ck);
    assert_int_equal(run_script("check", path), 0);
}

static void test_we_read_pythons_file(void **state)
{
    (void)state;
    need_python();
    char path[128];
    snprintf(path, sizeof path, "%s/theirs.safetensors", g_dir);
    assert_int_equal(run_script("write", path), 0);
    tf_checkpoint *got = NULL, *want = NULL;
    TF_ASSERT_OK(tf_checkpoint_load(path, NULL, &got));
    TF_ASSERT_OK(tf_checkpoint_create(&want));
    add_expected(want);
    assert_int_equal(tf_checkpoint_count(got), N_EXPECTED);
    for (size_t i = 0; i < N_EXPECTED; i++) {
        const tf_tensor *w = tf_checkpoint_tensor(want, i);
        const tf_tensor *g = tf_checkpoint_find(got, tf_checkpoint_name(want, i));
        assert_non_null(g);
        assert_int_equal(tf_tensor_dtype(g), tf_tensor_dtype(w));
        assert_int_equal(tf_tensor_rank(g), tf_tensor_rank(w));
        size_t n = tf_tensor_numel(w), bytes = n * tf_dtype_size(tf_tensor_dtype(w));
        unsigned char a[64], b[64];
        TF_ASSERT_OK(tf_tensor_copy_to_host(g, tf_tensor_dtype(g), a, n));
        TF_ASSERT_OK(tf_tensor_copy_to_host(w, tf_tensor_dtype(w), b, n));
        assert_memory_equal(a, b, bytes);
    }
    assert_string_equal(tf_checkpoint_meta(got, "note"), "caf\xc3\xa9");
    assert_string_equal(tf_checkpoint_meta(got, "step"), "7");
    tf_checkpoint_destroy(got);
    tf_checkpoint_destroy(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_reads_our_file),
        cmocka_unit_test(test_we_read_pythons_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
