/*
 * test_vulkan_engine.c - the Vulkan engine outside single primitives: device
 * enumeration, info and selection errors, what it refuses (unsupported
 * primitives), data-dependent errors surfacing at the next download,
 * buffer_copy, teardown with live buffers, and an eager-runtime gradient
 * on the Vulkan engine equal to the CPU engine's. Validation layer on.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include <tenferro/ops.h>

#include "vk_fixture.h"

static tf_plugin *vk_plugin(void)
{
    tf_plugin *p = NULL;
    TF_ASSERT_OK(tf_plugin_load("vulkan", &p));
    return p;
}

static void test_devices(void **state)
{
    (void)state;
    tf_plugin *p = vk_plugin();
    uint32_t n = tf_plugin_device_count(p);
    assert_true(n >= 1);
    int seen_gpu = 0;
    for (uint32_t i = 0; i < n; i++) {
        tf_device_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        TF_ASSERT_OK(tf_plugin_device_info(p, i, &info));
        assert_true(info.name[0] != '\0');
        assert_true(info.memory_bytes > 0);
        /* GPU-type devices are listed first; CPU-type ones are flagged as software. */
        if (info.type == TF_DEVICE_CPU)
            assert_true(info.flags & TF_DEVICE_FLAG_SOFTWARE);
        else
            assert_false(seen_gpu < 0);
        seen_gpu = info.type == TF_DEVICE_CPU ? -1 : 1;
    }
    tf_device_info info;
    info.struct_size = sizeof info;
    /* The core checks the index before the plugin sees it. */
    TF_ASSERT_STATUS(tf_plugin_device_info(p, n, &info), TF_ERR_OUT_OF_RANGE);
}

static void test_selection_errors(void **state)
{
    (void)state;
    tf_plugin *p = vk_plugin();
    tf_engine *e = NULL;
    tf_engine_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.device_index = 1000;
    TF_ASSERT_STATUS(tf_engine_create(p, &o, &e), TF_ERR_VALIDATION);
    assert_non_null(strstr(tf_error_cause(), "device_index"));
    o.device_index = 0;
    o.device_name = "no such device anywhere";
    TF_ASSERT_STATUS(tf_engine_create(p, &o, &e), TF_ERR_VALIDATION);
    assert_non_null(strstr(tf_error_cause(), "device_name"));
    o.device_name = NULL;
    const char *keys[1] = {"device_type"}, *bad_values[1] = {"tpu"};
    o.n_extra = 1;
    o.extra_keys = keys;
    o.extra_values = bad_values;
    TF_ASSERT_STATUS(tf_engine_create(p, &o, &e), TF_ERR_VALIDATION);
    const char *unknown[1] = {"flux_capacitor"};
    o.extra_keys = unknown;
    TF_ASSERT_STATUS(tf_engine_create(p, &o, &e), TF_ERR_VALIDATION);
    assert_non_null(strstr(tf_error_cause(), "flux_capacitor"));

    /* Choosing by name (a substring of device 0's) and device_type=any works. */
    tf_device_info info;
    info.struct_size = sizeof info;
    TF_ASSERT_OK(tf_plugin_device_info(p, 0, &info));
    char sub[8] = {0};
    memcpy(sub, info.name, strnlen(info.name, sizeof sub - 1));
    const char *any[1] = {"any"};
    o.extra_keys = keys;
    o.extra_values = any;
    o.device_name = sub;
    TF_ASSERT_OK(tf_engine_create(p, &o, &e));
    tf_engine_destroy(e);
    vk_assert_validation_clean();
}

static void test_unsupported(void **state)
{
    (void)state;
    tf_dtype d[2] = {TF_F32, TF_F32};
    tf_dtype sb[4] = {TF_BOOL, TF_F32, TF_BOOL, TF_BOOL};
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_SCATTER, 0, sb, 4)); /* f32 index */
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_UNARY, TF_UNARY_LOGICAL_NOT, d, 2));
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_COUNT_, 0, d, 2));
    tf_dtype i64[2] = {TF_I64, TF_I64};
    assert_true(tf_engine_supports(vk_engine, TF_PRIM_COPY, 0, i64, 2));
    /* Primitive numbers beyond this header's are answered 0, never executed. */
    assert_false(tf_engine_supports(vk_engine, TF_PRIM_COUNT_ + 5, 0, i64, 2));
}

/*
 * On a device with f64, i64 and bool support (lavapipe has all three) the engine claims
 * exactly what the CPU reference engine claims, for every primitive, sub-op and dtype list,
 * the complex dtypes (ABI 1.4) and their sub-ops (CONJ .. ANGLE, BINARY COMPLEX) included.
 */
static void test_supports_parity(void **state)
{
    (void)state;
    tf_dtype probe[3][2] = {{TF_F64, TF_F64}, {TF_I64, TF_I64}, {TF_BOOL, TF_BOOL}};
    uint32_t probe_op[3] = {TF_UNARY_EXP, TF_UNARY_NEG, TF_UNARY_LOGICAL_NOT};
    for (int i = 0; i < 3; i++) {
        if (!tf_engine_supports(vk_engine, TF_PRIM_UNARY, probe_op[i], probe[i], 2))
            skip();
    }
    long checked = 0;
    for (uint32_t prim = 0; prim < TF_PRIM_COUNT_ + 1; prim++) {
        for (uint32_t op = 0; op < TF_UNARY_COUNT_ + 1; op++) {
            for (size_t n = 1; n <= 4; n++) {
                size_t combos = 1;
                for (size_t k = 0; k < n; k++)
                    combos *= TF_DTYPE_COUNT;
                for (size_t c = 0; c < combos; c++) {
                    tf_dtype d[4];
                    size_t v = c;
                    for (size_t k = 0; k < n; k++, v /= TF_DTYPE_COUNT)
                        d[k] = (tf_dtype)(v % TF_DTYPE_COUNT);
                    int want = tf_engine_supports(vk_cpu, (tf_prim)prim, op, d, n);
                    int got = tf_engine_supports(vk_engine, (tf_prim)prim, op, d, n);
                    if ((want != 0) != (got != 0))
                        fail_msg("supports(%s, op %u, %zu dtypes starting %s): cpu %d, vulkan %d",
                                 tf_prim_name((tf_prim)prim), op, n, tf_dtype_name(d[0]), want,
                                 got);
                    checked++;
                }
            }
        }
    }
    assert_true(checked > 0);
}

static tf_tensor *vk_i32(const int32_t *v, int64_t n)
{
    tf_tensor *h = NULL, *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_I32, 1, &n, v, (size_t)n, &h));
    TF_ASSERT_OK(tf_engine_upload(vk_engine, h, &t));
    tf_tensor_release(h);
    return t;
}

/* Integer division by zero and failed checked conversions surface at the next download. */
static void test_data_errors(void **state)
{
    (void)state;
    int32_t a[4] = {7, -7, 8, 9}, b[4] = {2, 0, 4, 3};
    int64_t n = 4;
    tf_tensor *in[2] = {vk_i32(a, n), vk_i32(b, n)}, *out = NULL, *host = NULL;
    TF_ASSERT_OK(tf_tensor_empty(vk_engine, TF_I32, 1, &n, &out));
    tf_binary_params div = {sizeof div, TF_BINARY_DIV};
    TF_ASSERT_OK(tf_engine_execute(vk_engine, TF_PRIM_BINARY, &div, 2, in, 1, &out));
    TF_ASSERT_STATUS(tf_engine_download(vk_engine, out, &host), TF_ERR_VALIDATION);
    assert_non_null(strstr(tf_error_cause(), "division by zero"));
    /* Reported once: the engine is usable afterwards. */
    TF_ASSERT_OK(tf_engine_synchronize(vk_engine));

    float f[4] = {1.0f, 2.5f, -3.0f, 4.0f};
    tf_tensor *fh = NULL, *fv = NULL, *iv = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 1, &n, f, 4, &fh));
    TF_ASSERT_OK(tf_engine_upload(vk_engine, fh, &fv));
    TF_ASSERT_OK(tf_tensor_empty(vk_engine, TF_I32, 1, &n, &iv));
    tf_convert_params checked = {sizeof checked, 1};
    TF_ASSERT_OK(tf_engine_execute(vk_engine, TF_PRIM_CONVERT, &checked, 1, &fv, 1, &iv));
    TF_ASSERT_STATUS(tf_engine_synchronize(vk_engine), TF_ERR_OUT_OF_RANGE);
    TF_ASSERT_OK(tf_engine_synchronize(vk_engine));
    /* A GATHER index outside [0, extent). */
    int32_t bad_index[2] = {1, 4};
    int64_t two = 2;
    tf_tensor *gi[2] = {fv, vk_i32(bad_index, 2)}, *go = NULL;
    TF_ASSERT_OK(tf_tensor_empty(vk_engine, TF_F32, 1, &two, &go));
    tf_gather_params gp = {sizeof gp, 0, TF_GATHER_INDEX_SELECT, 0};
    TF_ASSERT_OK(tf_engine_execute(vk_engine, TF_PRIM_GATHER, &gp, 2, gi, 1, &go));
    TF_ASSERT_STATUS(tf_engine_synchronize(vk_engine), TF_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(tf_error_cause(), "index"));
    tf_tensor_release(gi[1]);
    tf_tensor_release(go);
    tf_tensor_release(fh);
    tf_tensor_release(fv);
    tf_tensor_release(iv);
    tf_tensor_release(in[0]);
    tf_tensor_release(in[1]);
    tf_tensor_release(out);
    vk_assert_validation_clean();
}

/* Uploads and downloads larger than the staging area, chunked through it. */
static void test_large_transfer(void **state)
{
    (void)state;
    int64_t n = 9 * 1024 * 1024; /* 36 MiB of f32: several staging chunks */
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)(i % 1000003);
    tf_tensor *h = NULL, *t = NULL, *back = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 1, &n, v, (size_t)n, &h));
    TF_ASSERT_OK(tf_engine_upload(vk_engine, h, &t));
    TF_ASSERT_OK(tf_engine_download(vk_engine, t, &back));
    const void *data = NULL;
    size_t count = 0;
    TF_ASSERT_OK(tf_tensor_data(back, TF_F32, &data, &count));
    assert_int_equal(count, (size_t)n);
    assert_memory_equal(data, v, (size_t)n * sizeof *v);
    free(v);
    tf_tensor_release(h);
    tf_tensor_release(t);
    tf_tensor_release(back);
    vk_assert_validation_clean();
}

/* The engine handle goes first; tensors on it are released afterwards. */
static void test_teardown_with_live_buffers(void **state)
{
    (void)state;
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open("vulkan", 0, &e));
    int64_t shape[2] = {33, 17};
    tf_tensor *a = NULL, *b = NULL;
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 2, shape, &a));
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 2, shape, &b));
    tf_fill_params fp = {sizeof fp, 0, {1.5, 0}, 0};
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_FILL, &fp, 0, NULL, 1, &a));
    tf_unary_params up = {sizeof up, TF_UNARY_EXP};
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_UNARY, &up, 1, &a, 1, &b));
    tf_engine_destroy(e); /* pending work, live buffers */
    tf_tensor_release(a);
    tf_tensor_release(b);
    vk_assert_validation_clean();
}

/* buffer_alloc/buffer_free from several threads at once, while the main thread computes. */
static void *alloc_worker(void *arg)
{
    int *failures = arg;
    for (int i = 0; i < 200; i++) {
        int64_t shape[1] = {1 + (i * 37) % 5000};
        tf_tensor *t = NULL;
        if (tf_tensor_empty(vk_engine, TF_F32, 1, shape, &t) != TF_OK)
            (*failures)++;
        tf_tensor_release(t);
    }
    return NULL;
}

static void test_concurrent_buffers(void **state)
{
    (void)state;
    pthread_t th[4];
    int failures[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, alloc_worker, &failures[i]), 0);
    tfr_rng rng;
    tfr_rng_seed(&rng, 81);
    int64_t shape[2] = {64, 64};
    for (int i = 0; i < 20; i++) {
        vk_pair x, y;
        vk_pair_make(&x, &rng, TF_F32, 2, shape, VK_TRANSPOSED, (vk_gen){-1, 1});
        vk_pair_output(&y, TF_F32, 2, shape);
        tf_unary_params up = {sizeof up, TF_UNARY_SIN};
        vk_run_compare("sin while other threads allocate", TF_PRIM_UNARY, &up, 1, &x, &y, 2e-5,
                       1e-6);
        vk_pair_free(&x);
        vk_pair_free(&y);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(failures[i], 0);
    }
}

/* Removes the plain files of a folder of ours, then the folder. */
static void remove_dir(const char *path)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return;
    char file[256];
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(file, sizeof file, "%s/%.200s", path, de->d_name);
        unlink(file);
    }
    closedir(d);
    rmdir(path);
}

/* The pipeline cache is written under $XDG_CACHE_HOME/tenferro at engine teardown. */
static void test_pipeline_cache_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/tf-vk-cache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *old = getenv("XDG_CACHE_HOME");
    char *saved = old ? strdup(old) : NULL;
    setenv("XDG_CACHE_HOME", dir, 1);
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open("vulkan", 0, &e));
    int64_t n = 16;
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &t));
    tf_fill_params fp = {sizeof fp, 0, {2.0, 0}, 0};
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_FILL, &fp, 0, NULL, 1, &t));
    TF_ASSERT_OK(tf_engine_synchronize(e));
    tf_tensor_release(t);
    tf_engine_destroy(e);
    if (saved) {
        setenv("XDG_CACHE_HOME", saved, 1);
        free(saved);
    } else {
        unsetenv("XDG_CACHE_HOME");
    }
    char sub[64];
    snprintf(sub, sizeof sub, "%s/tenferro", dir);
    DIR *d = opendir(sub);
    assert_non_null(d);
    int found = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        if (strncmp(de->d_name, "vulkan-", 7) == 0 && strstr(de->d_name, ".bin") != NULL)
            found = 1;
    }
    closedir(d);
    remove_dir(sub);
    remove_dir(dir); /* the validation layer keeps its own cache file here too */
    assert_true(found);
    vk_assert_validation_clean();
}

/* loss = sum(tanh(x @ w) * x2) with x2 = x @ w; the gradient wrt x on both engines. */
static tf_tensor *grad_on(tf_engine *engine, const tf_tensor *xh, const tf_tensor *wh)
{
    tf_runtime *rt = NULL;
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    TF_ASSERT_OK(tf_session_begin(rt, engine, &s));
    tf_tensor *xt = NULL;
    TF_ASSERT_OK(tf_engine_upload(engine, xh, &xt));
    tf_eager *x = NULL, *w = NULL, *y = NULL, *t = NULL, *z = NULL, *loss = NULL, *g = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(rt, xt, &x));
    TF_ASSERT_OK(tf_session_constant_from_host(s, wh, &w));
    TF_ASSERT_OK(tf_session_matmul(s, x, w, &y));
    TF_ASSERT_OK(tf_session_tanh(s, y, &t));
    TF_ASSERT_OK(tf_session_mul(s, t, y, &z));
    int axes[2] = {0, 1};
    TF_ASSERT_OK(tf_session_reduce_sum(s, z, axes, 2, &loss));
    TF_ASSERT_OK(tf_runtime_grad(rt, engine, loss, x, &g));
    tf_tensor *out = NULL;
    TF_ASSERT_OK(tf_engine_download(engine, tf_eager_value(g), &out));
    tf_eager *all[] = {x, w, y, t, z, loss, g};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    tf_tensor_release(xt);
    tf_session_end(s);
    tf_runtime_release(rt);
    return out;
}

static void test_eager_grad(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 71);
    int64_t xs[2] = {5, 7}, ws[2] = {7, 3};
    float xv[35], wv[21];
    for (int i = 0; i < 35; i++)
        xv[i] = (float)tfr_rng_real(&rng, -1, 1);
    for (int i = 0; i < 21; i++)
        wv[i] = (float)tfr_rng_real(&rng, -1, 1);
    tf_tensor *xh = NULL, *wh = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 2, xs, xv, 35, &xh));
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 2, ws, wv, 21, &wh));
    tf_tensor *gc = grad_on(vk_cpu, xh, wh), *gv = grad_on(vk_engine, xh, wh);
    vk_compare("grad of sum(tanh(x w) * (x w)) wrt x", gc, gv, 2e-5, 1e-6);
    tf_tensor_release(gc);
    tf_tensor_release(gv);
    tf_tensor_release(xh);
    tf_tensor_release(wh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_selection_errors),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_supports_parity),
        cmocka_unit_test(test_data_errors),
        cmocka_unit_test(test_large_transfer),
        cmocka_unit_test(test_teardown_with_live_buffers),
        cmocka_unit_test(test_concurrent_buffers),
        cmocka_unit_test(test_pipeline_cache_file),
        cmocka_unit_test(test_eager_grad),
    };
    return cmocka_run_group_tests_name("vulkan engine", tests, vk_group_setup, vk_group_teardown);
}
