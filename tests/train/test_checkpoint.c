/*
 * test_checkpoint.c - checkpoints in safetensors (checkpoint.h): every
 * dtype and rank round-trips with its metadata; the file's bytes are the
 * format's (little-endian length, JSON header, row-major data, padding,
 * order by element size); saving replaces files atomically and refuses what
 * it cannot write (also when a write fails part-way through, on the I/O
 * thread); an optimizer saved, loaded and continued trains bit for
 * bit like one that never stopped; and restoring refuses a checkpoint that
 * does not fit, leaving the optimizer unchanged. Malformed files are
 * test_checkpoint_malformed.c's.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tenferro/checkpoint.h>

#include "train_test.h"

static char g_dir[64];

static int make_dir(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/tf-ckpt-XXXXXX");
    if (!mkdtemp(g_dir))
        return -1;
    return tft_cpu_setup(state);
}

static int remove_dir(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        return -1;
    return tft_cpu_teardown(state);
}

static const char *path_of(const char *name)
{
    static char p[160];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    return p;
}

/* The whole file as bytes (at most cap). */
static size_t slurp(const char *path, unsigned char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* Asserts two tensors hold the same dtype, shape and elements (compared as bytes). */
static void expect_same(const tf_tensor *a, const tf_tensor *b)
{
    assert_int_equal(tf_tensor_dtype(a), tf_tensor_dtype(b));
    assert_int_equal(tf_tensor_rank(a), tf_tensor_rank(b));
    size_t rank = tf_tensor_rank(a), n = tf_tensor_numel(a);
    if (rank)
        assert_memory_equal(tf_tensor_shape(a), tf_tensor_shape(b), rank * sizeof(int64_t));
    size_t bytes = n * tf_dtype_size(tf_tensor_dtype(a));
    unsigned char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
    TF_ASSERT_OK(tf_tensor_copy_to_host(a, tf_tensor_dtype(a), x, n));
    TF_ASSERT_OK(tf_tensor_copy_to_host(b, tf_tensor_dtype(b), y, n));
    assert_memory_equal(x, y, bytes);
    free(x);
    free(y);
}

/* A host tensor of dtype and shape with element k = f(k) in column-major order. */
static tf_tensor *pattern(tf_dtype dtype, size_t rank, const int64_t *shape)
{
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    unsigned char *data = malloc(n * 16 + 1);
    for (size_t k = 0; k < n; k++) {
        double v = 0.25 * (double)k - 3.0 + sin((double)k);
        switch (dtype) {
        case TF_F32: ((float *)(void *)data)[k] = (float)v; break;
        case TF_F64: ((double *)(void *)data)[k] = v; break;
        case TF_I32: ((int32_t *)(void *)data)[k] = (int32_t)(k * 7) - 11; break;
        case TF_I64: ((int64_t *)(void *)data)[k] = (int64_t)k * 1000000007LL - 5; break;
        case TF_BOOL: data[k] = (unsigned char)(k % 3 == 0); break;
        case TF_C64:
            ((float *)(void *)data)[2 * k] = (float)v;
            ((float *)(void *)data)[2 * k + 1] = (float)(v * v - 1.0);
            break;
        case TF_C128:
            ((double *)(void *)data)[2 * k] = v;
            ((double *)(void *)data)[2 * k + 1] = -v / 3.0;
            break;
        }
    }
    tf_tensor *t = tft_host(dtype, rank, shape, data, n);
    free(data);
    return t;
}

static void test_round_trip_every_dtype_and_rank(void **state)
{
    (void)state;
    static const int64_t shapes[][4] = {{0}, {5}, {3, 4}, {2, 3, 4}, {3, 1, 2, 5}, {0, 3}, {1, 7}};
    static const size_t ranks[] = {0, 1, 2, 3, 4, 2, 2};
    tf_checkpoint *ck = NULL;
    TF_ASSERT_OK(tf_checkpoint_create(&ck));
    char name[32];
    for (int d = 0; d < TF_DTYPE_COUNT; d++) {
        if (d == TF_C128)
            continue; /* safetensors has no such dtype: test_save_and_add_refusals */
        for (size_t s = 0; s < sizeof ranks / sizeof ranks[0]; s++) {
            tf_tensor *t = pattern((tf_dtype)d, ranks[s], shapes[s]);
            snprintf(name, sizeof name, "%s.%zu", tf_dtype_name((tf_dtype)d), s);
            TF_ASSERT_OK(tf_checkpoint_add(ck, name, t));
            tf_tensor_release(t);
        }
    }
    /* a strided view (transposed) and a tensor in the engine's memory */
    tf_tensor *base = pattern(TF_F64, 2, (const int64_t[]){4, 6}), *view = NULL, *dev = NULL;
    TF_ASSERT_OK(tf_tensor_transpose(base, (const int[]){1, 0}, &view));
    TF_ASSERT_OK(tf_engine_upload(g_cpu, base, &dev));
    TF_ASSERT_OK(tf_checkpoint_add(ck, "transposed", view));
    TF_ASSERT_OK(tf_checkpoint_add(ck, "on the engine \xc3\xa9", dev));
    TF_ASSERT_OK(tf_checkpoint_set_meta(ck, "step", "41"));
    TF_ASSERT_OK(tf_checkpoint_set_meta(ck, "step", "42")); /* replaces */
    TF_ASSERT_OK(tf_checkpoint_set_meta(ck, "note", "quote \" backslash \\ tab \t"));
    TF_ASSERT_OK(tf_checkpoint_save(ck, path_of("all.safetensors")));
    tf_checkpoint *back = NULL;
    TF_ASSERT_OK(tf_checkpoint_load(path_of("all.safetensors"), NULL, &back));
    assert_int_equal(tf_checkpoint_count(back), tf_checkpoint_count(ck));
    for (size_t i = 0; i < tf_checkpoint_count(ck); i++) {
        tf_tensor *got = tf_checkpoint_find(back, tf_checkpoint_name(ck, i));
        assert_non_null(got);
        expect_same(got, tf_checkpoint_tensor(ck, i));
    }
    assert_string_equal(tf_checkpoint_meta(back, "step"), "42");
    assert_string_equal(tf_checkpoint_meta(back, "note"), "quote \" backslash \\ tab \t");
    assert_int_equal(tf_checkpoint_meta_count(back), 2);
    assert_null(tf_checkpoint_meta(back, "missing"));
    assert_null(tf_checkpoint_find(back, "missing"));
    /* loaded into the engine's memory */
    tf_checkpoint *on_engine = NULL;
    TF_ASSERT_OK(tf_checkpoint_load(path_of("all.safetensors"), g_cpu, &on_engine));
    tf_tensor *t = tf_checkpoint_find(on_engine, "transposed");
    assert_int_equal(tf_tensor_placement(t), TF_PLACEMENT_ENGINE);
    expect_same(t, view);
    tf_checkpoint_destroy(on_engine);
    tf_checkpoint_destroy(back);
    tf_checkpoint_destroy(ck);
    tf_tensor_release(base);
    tf_tensor_release(view);
    tf_tensor_release(dev);
}

/* The bytes on disk are the format's: a [2, 3] f64 tensor is stored row by row. */
static void test_file_bytes_are_safetensors(void **state)
{
    (void)state;
    const double cm[6] = {11, 21, 12, 22, 13, 23}; /* element (i, j) = 10 (i+1) + j + 1 */
    tf_tensor *a = tft_host(TF_F64, 2, (const int64_t[]){2, 3}, cm, 6);
    const int32_t iv[1] = {7};
    tf_tensor *b = tft_host(TF_I32, 0, NULL, iv, 1);
    const unsigned char bv[2] = {1, 0};
    tf_tensor *c = tft_host(TF_BOOL, 1, (const int64_t[]){2}, bv, 2);
    tf_checkpoint *ck = NULL;
    TF_ASSERT_OK(tf_checkpoint_create(&ck));
    TF_ASSERT_OK(tf_checkpoint_add(ck, "flag", c)); /* added first, written last */
    TF_ASSERT_OK(tf_checkpoint_add(ck, "b", b));
    TF_ASSERT_OK(tf_checkpoint_add(ck, "a", a));
    TF_ASSERT_OK(tf_checkpoint_set_meta(ck, "format", "pt"));
    TF_ASSERT_OK(tf_checkpoint_save(ck, path_of("bytes.safetensors")));
    unsigned char file[1024];
    size_t n = slurp(path_of("bytes.safetensors"), file, sizeof file);
    uint64_t len = 0;
    for (int k = 7; k >= 0; k--)
        len = (len << 8) | file[k];
    assert_int_equal((8 + len) % 8, 0);
    assert_int_equal(n, 8 + len + 48 + 4 + 2);
    char header[512];
    memcpy(header, file + 8, len);
    header[len] = '\0';
    const char *want = "{\"__metadata__\":{\"format\":\"pt\"},"
                       "\"a\":{\"dtype\":\"F64\",\"shape\":[2,3],\"data_offsets\":[0,48]},"
                       "\"b\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[48,52]},"
                       "\"flag\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[52,54]}}";
    assert_memory_equal(header, want, strlen(want));
    for (size_t k = strlen(want); k < len; k++)
        assert_int_equal(header[k], ' ');
    const double rm[6] = {11, 12, 13, 21, 22, 23};
    assert_memory_equal(file + 8 + len, rm, sizeof rm);
    assert_memory_equal(file + 8 + len + 48, iv, 4);
    assert_memory_equal(file + 8 + len + 52, bv, 2);
    tf_checkpoint_destroy(ck);
    tf_tensor_release(a);
    tf_tensor_release(b);
    tf_tensor_release(c);
}

/* Whether the file's data section holds t (a pattern() tensor of rank 2) in row-major
   order at offset `begin`: element (i, j) at begin + (i d1 + j) esize. */
static void expect_row_major(const unsigned char *file, size_t begin, const tf_tensor *t)
{
    const int64_t *d = tf_tensor_shape(t);
    size_t esize = tf_dtype_size(tf_tensor_dtype(t)), n = tf_tensor_numel(t);
    unsigned char *cm = malloc(n * esize + 1);
    TF_ASSERT_OK(tf_tensor_copy_to_host(t, tf_tensor_dtype(t), cm, n));
    size_t bad = 0;
    for (int64_t i = 0; i < d[0]; i++)
        for (int64_t j = 0; j < d[1]; j++)
            bad += memcmp(file + begin + (size_t)(i * d[1] + j) * esize,
                          cm + (size_t)(i + j * d[0]) * esize, esize) != 0;
    assert_int_equal(bad, 0);
    free(cm);
}

/*
 * Tensors larger than one chunk of the reordering, rank 2 and 3, many chunks
 * of them in all (so the I/O runs on the pipe's thread, checkpoint_pipe.c),
 * with a vector written straight from memory between them: the file holds
 * each at its offset in row-major order, and loading gives them back.
 */
static void test_large_tensors_round_trip(void **state)
{
    (void)state;
    tf_tensor *a = pattern(TF_F32, 2, (const int64_t[]){1201, 1003});
    tf_tensor *b = pattern(TF_F64, 3, (const int64_t[]){97, 61, 103});
    tf_tensor *c = pattern(TF_F64, 1, (const int64_t[]){5000});
    tf_tensor *d = pattern(TF_BOOL, 2, (const int64_t[]){3001, 701});
    tf_checkpoint *ck = NULL, *back = NULL;
    TF_ASSERT_OK(tf_checkpoint_create(&ck));
    TF_ASSERT_OK(tf_checkpoint_add(ck, "a", a));
    TF_ASSERT_OK(tf_checkpoint_add(ck, "b", b));
    TF_ASSERT_OK(tf_checkpoint_add(ck, "c", c));
    TF_ASSERT_OK(tf_checkpoint_add(ck, "d", d));
    TF_ASSERT_OK(tf_checkpoint_save(ck, path_of("large.safetensors")));
    /* written by element size, largest first, then as added: b, c, a, d */
    size_t sb = 97 * 61 * 103 * 8, sc = 5000 * 8, sa = 1201 * 1003 * 4, sd = 3001 * 701;
    size_t cap = 8 + 4096 + sb + sc + sa + sd;
    unsigned char *file = malloc(cap);
    size_t got = slurp(path_of("large.safetensors"), file, cap);
    size_t hl = 0;
    for (int k = 7; k >= 0; k--)
        hl = hl << 8 | file[k];
    assert_int_equal(got, 8 + hl + sb + sc + sa + sd);
    expect_row_major(file, 8 + hl + sb + sc, a);
    expect_row_major(file, 8 + hl + sb + sc + sa, d);
    free(file);
    TF_ASSERT_OK(tf_checkpoint_load(path_of("large.safetensors"), NULL, &back));
    expect_same(tf_checkpoint_find(back, "a"), a);
    expect_same(tf_checkpoint_find(back, "b"), b);
    expect_same(tf_checkpoint_find(back, "c"), c);
    expect_same(tf_checkpoint_find(back, "d"), d);
    tf_checkpoint_destroy(ck);
    tf_checkpoint_destroy(back);
    tf_tensor_release(a);
    tf_tensor_release(b);
    tf_tensor_release(c);
    tf_tensor_release(d);
}

/*
 * A write that fails part-way, on the pipe's thread (the file size limit
 * reached after a few chunks): the save fails with the reason, the file it
 * was to replace is untouched, and no temporary is left.
 */
static void test_write_failure_midway(void **state)
{
    (void)state;
    tf_tensor *a = pattern(TF_F64, 2, (const int64_t[]){1500, 1000}); /* 12 MB, reordered */
    tf_checkpoint *ck = NULL, *back = NULL;
    TF_ASSERT_OK(tf_checkpoint_create(&ck));
    TF_ASSERT_OK(tf_checkpoint_add(ck, "a", a));
    FILE *f = fopen(path_of("keep.safetensors"), "wb");
    fputs("old contents", f);
    fclose(f);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 3u << 20;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    tf_status st = tf_checkpoint_save(ck, path_of("keep.safetensors"));
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    trt_expect_fail(st, TF_ERR_RUNTIME_STATE, "path");
    assert_non_null(strstr(tf_train_error_message(), "cannot write"));
    unsigned char buf[64];
    size_t n = slurp(path_of("keep.safetensors"), buf, sizeof buf);
    assert_int_equal(n, 12);
    assert_memory_equal(buf, "old contents", 12);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test $(ls '%s' | grep -c tmp) -eq 0", g_dir);
    assert_int_equal(system(cmd), 0);
    /* and the same save without the limit works */
    TF_ASSERT_OK(tf_checkpoint_save(ck, path_of("keep.safetensors")));
    TF_ASSERT_OK(tf_checkpoint_load(path_of("keep.safetensors"), NULL, &back));
    expect_same(tf_checkpoint_find(back, "a"), a);
    tf_checkpoint_destroy(back);
    tf_checkpoint_destroy(ck);
    tf_tensor_release(a);
}

static void test_save_and_add_refusals(void **state)
{
    (void)state;
    tf_checkpoint *ck = NULL;
    TF_ASSERT_OK(tf_checkpoint_create(&ck));
    tf_tensor *t = pattern(TF_F64, 1, (const int64_t[]){3});
    trt_expect_fail(tf_checkpoint_add(ck, "", t), TF_ERR_VALIDATION, "name");
    trt_expect_fail(tf_checkpoint_add(ck, "__metadata__", t), TF_ERR_VALIDATION, "name");
    trt_expect_fail(tf_checkpoint_add(ck, "bad \xff utf-8", t), TF_ERR_VALIDATION, "name");
    trt_expect_fail(tf_checkpoint_add(ck, "overlong \xc0\xaf", t), TF_ERR_VALIDATION, "name");
    trt_expect_fail(tf_checkpoint_add(ck, "x", NULL), TF_ERR_VALIDATION, "tensor");
    tf_tensor *z = pattern(TF_C128, 1, (const int64_t[]){3}); /* safetensors has no C128 */
    trt_expect_fail(tf_checkpoint_add(ck, "z", z), TF_ERR_UNSUPPORTED, "tensor");
    assert_non_null(strstr(tf_train_error_message(), "c128"));
    assert_null(tf_checkpoint_find(ck, "z"));
    tf_tensor_release(z);
    TF_ASSERT_OK(tf_checkpoint_add(ck, "x", t));
    trt_expect_fail(tf_checkpoint_add(ck, "x", t), TF_ERR_VALIDATION, "name");
    trt_expect_fail(tf_checkpoint_set_meta(ck, "", "v"), TF_ERR_VALIDATION, "key");
    trt_expect_fail(tf_checkpoint_set_meta(ck, "k", "\xed\xa0\x80"), TF_ERR_VALIDATION, "value");
    assert_int_equal(tf_checkpoint_count(ck), 1);
    assert_int_equal(tf_checkpoint_meta_count(ck), 0);
    /* an unwritable destination: an error, the destination untouched, no temporary left */
    trt_expect_fail(tf_checkpoint_save(ck, path_of("no-such-dir/x.safetensors")),
                    TF_ERR_RUNTIME_STATE, "path");
    trt_expect_fail(tf_checkpoint_save(ck, ""), TF_ERR_VALIDATION, "path");
    /* saving over a file replaces it whole */
    FILE *f = fopen(path_of("over.safetensors"), "wb");
    fputs("old contents", f);
    fclose(f);
    TF_ASSERT_OK(tf_checkpoint_save(ck, path_of("over.safetensors")));
    tf_checkpoint *back = NULL;
    TF_ASSERT_OK(tf_checkpoint_load(path_of("over.safetensors"), NULL, &back));
    expect_same(tf_checkpoint_find(back, "x"), t);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test $(ls '%s' | grep -c tmp) -eq 0", g_dir);
    assert_int_equal(system(cmd), 0);
    trt_expect_fail(tf_checkpoint_load(path_of("missing.safetensors"), NULL, &back),
                    TF_ERR_RUNTIME_STATE, "path");
    trt_expect_fail(tf_checkpoint_load(g_dir, NULL, &back), TF_ERR_VALIDATION, "path");
    tf_checkpoint_destroy(back);
    tf_checkpoint_destroy(ck);
    tf_tensor_release(t);
}

/* ---- optimizers: save, load, continue ---- */

#define NP 3
static const char *const k_names[NP] = {"w", "b", "scale"};

/* An Adam optimizer over three parameters in two groups, started from fixed values. */
static tf_optim *make_optim(tf_runtime *rt)
{
    static const int64_t shapes[NP][2] = {{4, 3}, {3, 0}, {1, 0}};
    tf_eager *p[NP];
    for (int i = 0; i < NP; i++) {
        size_t rank = shapes[i][1] ? 2 : 1, n = (size_t)shapes[i][0] * (rank == 2 ? 3 : 1);
        double v[12];
        for (size_t k = 0; k < n; k++)
            v[k] = 0.3 * cos(1.7 * (double)k + i);
        p[i] = trt_param(rt, rank, shapes[i], v, n);
    }
    tf_optim *opt = NULL;
    TF_ASSERT_OK(tf_optim_create(rt, TF_OPTIM_ADAMW, &opt));
    tf_optim_options o;
    tf_optim_options_default(TF_OPTIM_ADAMW, &o);
    o.lr = 0.05;
    TF_ASSERT_OK(tf_optim_add_group(opt, &o, p, 2));
    o.lr = 0.01;
    o.weight_decay = 0;
    TF_ASSERT_OK(tf_optim_add_group(opt, &o, p + 2, 1));
    for (int i = 0; i < NP; i++)
        tf_eager_release(p[i]);
    return opt;
}

/* One training step on loss = sum(tanh(x w + b) * scale)^2 for a fixed x. */
static void train_step(tf_runtime *rt, tf_optim *opt)
{
    static const double xv[8] = {0.5, -1, 2, 0.25, 1, 0.5, -0.5, 1.5};
    tf_eager *x = tft_f64(rt, 0, 2, (const int64_t[]){2, 4}, xv, 8);
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, g_cpu, &s));
    tf_eager *t[6] = {NULL};
    TF_ASSERT_OK(tf_session_matmul(s, x, tf_optim_param(opt, 0), &t[0]));
    TF_ASSERT_OK(tf_session_add(s, t[0], tf_optim_param(opt, 1), &t[1]));
    TF_ASSERT_OK(tf_session_tanh(s, t[1], &t[2]));
    TF_ASSERT_OK(tf_session_mul(s, t[2], tf_optim_param(opt, 2), &t[3]));
    TF_ASSERT_OK(tf_session_reduce_sum(s, t[3], NULL, 0, &t[4]));
    TF_ASSERT_OK(tf_session_mul(s, t[4], t[4], &t[5]));
    tf_session_end(s);
    TF_ASSERT_OK(tf_eager_backward(t[5], g_cpu));
    for (int i = 0; i < 6; i++)
        tf_eager_release(t[i]);
    tf_eager_release(x);
    TF_ASSERT_OK(tf_optim_step(opt, g_cpu));
}

static void values_of(tf_optim *opt, double *out)
{
    size_t k = 0;
    for (int i = 0; i < NP; i++) {
        const tf_tensor *v = tf_eager_value(tf_optim_param(opt, (size_t)i));
        trt_read(v, out + k, tf_tensor_numel(v));
        k += tf_tensor_numel(v);
    }
}

static void test_save_load_continue_is_bit_identical(void **state)
{
    (void)state;
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_optim *straight = make_optim(rt), *stopped = make_optim(rt);
    for (int k = 0; k < 5; k++) {
        train_step(rt, straight);
        train_step(rt, stopped);
    }
    TF_ASSERT_OK(tf_optim_set_lr(stopped, 0, 0.04)); /* a schedule moved it: saved too */
    TF_ASSERT_OK(tf_optim_set_lr(straight, 0, 0.04));
    tf_checkpoint *ck = NULL;
    TF_ASSERT_OK(tf_checkpoint_create(&ck));
    TF_ASSERT_OK(tf_checkpoint_add_optim(ck, stopped, k_names, NP));
    TF_ASSERT_OK(tf_checkpoint_set_meta(ck, "epoch", "5"));
    TF_ASSERT_OK(tf_checkpoint_save(ck, path_of("optim.safetensors")));
    tf_checkpoint_destroy(ck);
    tf_optim_destroy(stopped);

    tf_optim *resumed = make_optim(rt); /* fresh values, fresh state, lr 0.05 */
    TF_ASSERT_OK(tf_checkpoint_load(path_of("optim.safetensors"), g_cpu, &ck));
    assert_string_equal(tf_checkpoint_meta(ck, "optim.kind"), "adamw");
    TF_ASSERT_OK(tf_checkpoint_restore_optim(ck, resumed, k_names, NP));
    tf_checkpoint_destroy(ck);
    assert_int_equal(tf_optim_step_count(resumed), 5);
    assert_int_equal(tf_optim_param_steps(resumed, 2), 5);
    tf_optim_options o;
    TF_ASSERT_OK(tf_optim_group_options(resumed, 0, &o));
    assert_true(o.lr == 0.04 && o.weight_decay == 1e-2);
    for (int k = 0; k < 4; k++) {
        train_step(rt, straight);
        train_step(rt, resumed);
    }
    double a[16], b[16];
    values_of(straight, a);
    values_of(resumed, b);
    trt_expect_bits("resumed", b, a, 16);
    tf_tensor *sa = NULL, *sb = NULL;
    TF_ASSERT_OK(tf_optim_state(straight, 0, "exp_avg_sq", &sa));
    TF_ASSERT_OK(tf_optim_state(resumed, 0, "exp_avg_sq", &sb));
    trt_read(sa, a, 12);
    trt_read(sb, b, 12);
    trt_expect_bits("exp_avg_sq", b, a, 12);
    tf_tensor_release(sa);
    tf_tensor_release(sb);
    tf_optim_destroy(straight);
    tf_optim_destroy(resumed);
    tf_runtime_release(rt);
}

/* A restore that does not fit: refused, the optimizer untouched. */
static void expect_restore_refused(tf_checkpoint *ck, tf_optim *opt, tf_status want)
{
    tf_eager *before[NP];
    for (int i = 0; i < NP; i++)
        before[i] = tf_optim_param(opt, (size_t)i);
    uint64_t steps = tf_optim_step_count(opt);
    trt_expect_fail(tf_checkpoint_restore_optim(ck, opt, k_names, NP), want, NULL);
    for (int i = 0; i < NP; i++)
        assert_ptr_equal(tf_optim_param(opt, (size_t)i), before[i]);
    assert_int_equal(tf_optim_step_count(opt), steps);
    tf_optim_options o;
    TF_ASSERT_OK(tf_optim_group_options(opt, 0, &o));
    assert_true(o.lr == 0.05);
}

static void test_restore_refusals(void **state)
{
    (void)state;
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_optim *src = make_optim(rt), *dst = make_optim(rt);
    train_step(rt, src);
    TF_ASSERT_OK(tf_optim_set_lr(src, 0, 0.5));
    tf_checkpoint *ck = NULL, *part = NULL;
    TF_ASSERT_OK(tf_checkpoint_create(&ck));
    TF_ASSERT_OK(tf_checkpoint_add_optim(ck, src, k_names, NP));
    trt_expect_fail(tf_checkpoint_add_optim(ck, src, k_names, NP), TF_ERR_VALIDATION, "names");
    const char *twice[NP] = {"w", "w", "x"};
    trt_expect_fail(tf_checkpoint_add_optim(ck, src, twice, NP), TF_ERR_VALIDATION, "names");
    trt_expect_fail(tf_checkpoint_restore_optim(ck, dst, k_names, 2), TF_ERR_VALIDATION, "names");

    /* every entry but one of the state */
    TF_ASSERT_OK(tf_checkpoint_create(&part));
    for (size_t i = 0; i < tf_checkpoint_count(ck); i++)
        if (strcmp(tf_checkpoint_name(ck, i), "optim.w.exp_avg") != 0)
            TF_ASSERT_OK(tf_checkpoint_add(part, tf_checkpoint_name(ck, i),
                                           tf_checkpoint_tensor(ck, i)));
    for (size_t i = 0; i < tf_checkpoint_meta_count(ck); i++) {
        const char *key = tf_checkpoint_meta_key(ck, i);
        TF_ASSERT_OK(tf_checkpoint_set_meta(part, key, tf_checkpoint_meta(ck, key)));
    }
    expect_restore_refused(part, dst, TF_ERR_VALIDATION);
    /* a tensor of another shape */
    tf_tensor *wrong = pattern(TF_F64, 1, (const int64_t[]){4});
    TF_ASSERT_OK(tf_checkpoint_add(part, "optim.w.exp_avg", wrong));
    expect_restore_refused(part, dst, TF_ERR_SHAPE_MISMATCH);
    tf_checkpoint_destroy(part);
    /* another kind, a malformed number, another group layout */
    static const char *const edits[][2] = {{"optim.kind", "sgd"},
                                           {"optim.steps", "-1"},
                                           {"optim.group.0.lr", "fast"},
                                           {"optim.group.0.lr", "-0.5"},
                                           {"optim.groups", "3"},
                                           {"optim.b.group", "1"}};
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        TF_ASSERT_OK(tf_checkpoint_create(&part));
        for (size_t i = 0; i < tf_checkpoint_count(ck); i++)
            TF_ASSERT_OK(tf_checkpoint_add(part, tf_checkpoint_name(ck, i),
                                           tf_checkpoint_tensor(ck, i)));
        for (size_t i = 0; i < tf_checkpoint_meta_count(ck); i++) {
            const char *key = tf_checkpoint_meta_key(ck, i);
            TF_ASSERT_OK(tf_checkpoint_set_meta(part, key, tf_checkpoint_meta(ck, key)));
        }
        TF_ASSERT_OK(tf_checkpoint_set_meta(part, edits[e][0], edits[e][1]));
        expect_restore_refused(part, dst, TF_ERR_VALIDATION);
        tf_checkpoint_destroy(part);
    }
    TF_ASSERT_OK(tf_checkpoint_restore_optim(ck, dst, k_names, NP)); /* the whole one fits */
    tf_optim_options o;
    TF_ASSERT_OK(tf_optim_group_options(dst, 0, &o));
    assert_true(o.lr == 0.5);
    tf_tensor_release(wrong);
    tf_checkpoint_destroy(ck);
    tf_optim_destroy(src);
    tf_optim_destroy(dst);
    tf_runtime_release(rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_dtype_and_rank),
        cmocka_unit_test(test_file_bytes_are_safetensors),
        cmocka_unit_test(test_large_tensors_round_trip),
        cmocka_unit_test(test_write_failure_midway),
        cmocka_unit_test(test_save_and_add_refusals),
        cmocka_unit_test(test_save_load_continue_is_bit_identical),
        cmocka_unit_test(test_restore_refusals),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
