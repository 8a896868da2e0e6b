/*
 * test_vulkan_faults.c - the Vulkan engine's faults as typed errors (issue 8):
 * device-memory exhaustion and a lost device.
 *
 * Exhaustion is made real with the memory_limit option (the engine holds no
 * more device memory than that), so every path that allocates can run out:
 * an upload, a temporary of an execute (DOT_GENERAL materialising an operand),
 * the outputs of eager ops and of a backward pass. Driver failures that
 * lavapipe never produces are injected with debug_fail (a testing aid of the
 * engine: the Nth vkQueueSubmit, vkWaitForFences or device-block
 * vkAllocateMemory reports the failure instead of calling the driver, and the
 * engine handles it on the same path as a real one).
 *
 * Each test checks the status and that the engine's message (tf_error_cause)
 * names what failed, that outputs were not written, that values computed
 * before are intact and the grad slots unchanged, and that the engine (after
 * exhaustion) or a new engine (after a loss) works. Validation layer on.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdint.h>

#include <tenferro/ops.h>

#include "vk_fixture.h"

#define SENTINEL_T ((tf_tensor *)(uintptr_t)0x5e5e5e50)
#define SENTINEL_E ((tf_eager *)(uintptr_t)0x5e5e5e50)
#define KIB 1024

/* A Vulkan engine with the extra options keys[i] = values[i]. */
static tf_status vk_create(size_t n, const char *const *keys, const char *const *values,
                           tf_engine **out)
{
    tf_plugin *p = NULL;
    TF_ASSERT_OK(tf_plugin_load("vulkan", &p));
    tf_engine_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.n_extra = (uint32_t)n;
    o.extra_keys = (const char **)keys;
    o.extra_values = (const char **)values;
    return tf_engine_create(p, &o, out);
}

static tf_engine *vk_open1(const char *key, const char *value)
{
    tf_engine *e = NULL;
    TF_ASSERT_OK(vk_create(1, &key, &value, &e));
    return e;
}

static tf_engine *vk_open2(const char *k1, const char *v1, const char *k2, const char *v2)
{
    const char *keys[2] = {k1, k2}, *values[2] = {v1, v2};
    tf_engine *e = NULL;
    TF_ASSERT_OK(vk_create(2, keys, values, &e));
    return e;
}

static void assert_cause(const char *needle)
{
    if (strstr(tf_error_cause(), needle) == NULL)
        fail_msg("cause \"%s\" (message \"%s\") does not name \"%s\"", tf_error_cause(),
                 tf_error_message(), needle);
}

/* A host f32 tensor of n values v[i] = (i % 97) * 0.125 - scale. */
static tf_tensor *host_f32(int64_t n, float scale)
{
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = (float)(i % 97) * 0.125f - scale;
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 1, &n, v, (size_t)n, &t));
    free(v);
    return t;
}

/* The f32 values of a tensor on engine e (caller frees). */
static float *read_f32(tf_engine *e, const tf_tensor *t)
{
    tf_tensor *h = NULL;
    TF_ASSERT_OK(tf_engine_download(e, t, &h));
    size_t n = tf_tensor_numel(h);
    float *v = malloc((n ? n : 1) * sizeof *v);
    TF_ASSERT_OK(tf_tensor_copy_to_host(h, TF_F32, v, n));
    tf_tensor_release(h);
    return v;
}

static void assert_same_values(tf_engine *e, const tf_tensor *t, const tf_tensor *host)
{
    size_t n = tf_tensor_numel(host);
    float *got = read_f32(e, t), *want = malloc((n ? n : 1) * sizeof *want);
    TF_ASSERT_OK(tf_tensor_copy_to_host(host, TF_F32, want, n));
    int same = memcmp(got, want, n * sizeof *got) == 0;
    free(got);
    free(want);
    assert_true(same);
}

static void fill(tf_engine *e, tf_tensor *t, double value)
{
    tf_fill_params fp = {sizeof fp, 0, {value, 0}, 0};
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_FILL, &fp, 0, NULL, 1, &t));
}

static void assert_all(tf_engine *e, const tf_tensor *t, float value)
{
    size_t n = tf_tensor_numel(t);
    float *v = read_f32(e, t);
    for (size_t i = 0; i < n; i++) {
        if (v[i] != value) {
            float got = v[i];
            free(v);
            fail_msg("element %zu = %g, want %g", i, got, value);
        }
    }
    free(v);
}

/* ---- options ---------------------------------------------------------------------------- */

static void test_options(void **state)
{
    (void)state;
    static const char *const bad_limits[] = {
        "0", "-1", "abc", "12q", "1kb", "", "99999999999999999999999", "18446744073709551615g"};
    tf_engine *e = (tf_engine *)(uintptr_t)0x5e5e5e50;
    for (size_t i = 0; i < sizeof bad_limits / sizeof bad_limits[0]; i++) {
        const char *k = "memory_limit";
        TF_ASSERT_STATUS(vk_create(1, &k, &bad_limits[i], &e), TF_ERR_VALIDATION);
        assert_cause("memory_limit");
    }
    static const char *const bad_faults[] = {"device_lost",    "device_lost@0", "device_lost@x",
                                             "device_lost@1x", "melt@1",        ""};
    for (size_t i = 0; i < sizeof bad_faults / sizeof bad_faults[0]; i++) {
        const char *k = "debug_fail";
        TF_ASSERT_STATUS(vk_create(1, &k, &bad_faults[i], &e), TF_ERR_VALIDATION);
        assert_cause("debug_fail");
    }
    assert_ptr_equal(e, (tf_engine *)(uintptr_t)0x5e5e5e50); /* never written */
    /* Units: 64k is 65536 bytes; a 64 KiB tensor fits, one more element does not. */
    e = vk_open1("memory_limit", "64k");
    tf_tensor *t = NULL;
    int64_t n = 16 * KIB;
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &t));
    tf_tensor_release(t);
    n++;
    TF_ASSERT_STATUS(tf_tensor_empty(e, TF_F32, 1, &n, &t), TF_ERR_OUT_OF_MEMORY);
    tf_engine_destroy(e);
    vk_assert_validation_clean();
}

/* ---- device memory exhaustion ----------------------------------------------------------- */

/* An upload beyond the limit fails typed; freeing makes room; the engine keeps working. */
static void test_limit_upload(void **state)
{
    (void)state;
    tf_engine *e = vk_open1("memory_limit", "1m");
    tf_tensor *ah = host_f32(128 * KIB, 3), *bh = host_f32(192 * KIB, 5); /* 512, 768 KiB */
    tf_tensor *a = NULL, *b = SENTINEL_T;
    TF_ASSERT_OK(tf_engine_upload(e, ah, &a));
    TF_ASSERT_STATUS(tf_engine_upload(e, bh, &b), TF_ERR_OUT_OF_MEMORY);
    assert_int_equal(tf_error_status(), TF_ERR_OUT_OF_MEMORY);
    assert_ptr_equal(b, SENTINEL_T);
    assert_cause("786432 bytes asked for");
    assert_cause("memory_limit is 1048576 bytes");
    assert_cause("heap ");
    int64_t n = 192 * KIB;
    TF_ASSERT_STATUS(tf_tensor_empty(e, TF_F32, 1, &n, &b), TF_ERR_OUT_OF_MEMORY);
    assert_ptr_equal(b, SENTINEL_T);
    /* Nothing changed: a reads back exactly (downloads need no device memory). */
    assert_same_values(e, a, ah);
    tf_tensor_release(a);
    TF_ASSERT_OK(tf_engine_upload(e, bh, &b));
    assert_same_values(e, b, bh);
    tf_tensor_release(b);
    tf_tensor_release(ah);
    tf_tensor_release(bh);
    tf_engine_destroy(e);
    vk_assert_validation_clean();
}

/*
 * A buffer freed while a recorded (unsubmitted) op still uses it holds its
 * memory until that op has run; allocating then finishes the pending work
 * and succeeds, without a synchronize.
 */
typedef struct alloc_job {
    tf_engine *e;
    int64_t n;
    tf_status st;
    tf_tensor *t;
} alloc_job;

static void *alloc_on_thread(void *arg)
{
    alloc_job *job = arg;
    job->st = tf_tensor_empty(job->e, TF_F32, 1, &job->n, &job->t);
    return NULL;
}

static void test_limit_reclaims_deferred(void **state)
{
    (void)state;
    tf_engine *e = vk_open1("memory_limit", "1m");
    int64_t n = 192 * KIB; /* 768 KiB: two cannot coexist */
    tf_tensor *t = NULL, *u = NULL;
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &t));
    fill(e, t, 2.5);
    tf_tensor_release(t); /* pending: parked until its batch completes */
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &u));
    fill(e, u, -1.0);
    assert_all(e, u, -1.0f);
    /* The same from another thread (buffer_alloc may come from any thread). */
    fill(e, u, 4.0);
    tf_tensor_release(u);
    alloc_job job = {e, n, TF_ERR_BACKEND, NULL};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, alloc_on_thread, &job), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    TF_ASSERT_OK(job.st);
    fill(e, job.t, 9.0);
    assert_all(e, job.t, 9.0f);
    tf_tensor_release(job.t);
    tf_engine_destroy(e);
    vk_assert_validation_clean();
}

/*
 * DOT_GENERAL of a lhs whose free axes do not merge needs a dense temporary
 * of it: with the limit nearly reached that allocation fails inside execute.
 * The output keeps its contents; after freeing ballast the same call works
 * and equals the CPU engine's.
 */
static void test_limit_execute(void **state)
{
    (void)state;
    tf_engine *e = vk_open1("memory_limit", "1m");
    int64_t root_shape[3] = {256, 16, 16}, rhs_shape[2] = {256, 64}, out_shape[3] = {16, 16, 64};
    int perm[3] = {2, 1, 0}; /* view [16, 16, 256]: strides 4096, 256, 1 */
    int64_t root_n = 256 * 16 * 16;
    tf_tensor *root_h = host_f32(root_n, 6), *rhs_flat = host_f32(256 * 64, 4);
    tf_tensor *root_hs = NULL, *rhs_h = NULL;
    TF_ASSERT_OK(tf_tensor_reshape(root_h, 3, root_shape, &root_hs));
    TF_ASSERT_OK(tf_tensor_reshape(rhs_flat, 2, rhs_shape, &rhs_h));
    tf_tensor *root_v = NULL, *rhs_v = NULL, *lhs_v = NULL, *lhs_h = NULL;
    TF_ASSERT_OK(tf_engine_upload(e, root_hs, &root_v)); /* 256 KiB */
    TF_ASSERT_OK(tf_engine_upload(e, rhs_h, &rhs_v));    /* 64 KiB */
    TF_ASSERT_OK(tf_tensor_transpose(root_v, perm, &lhs_v));
    TF_ASSERT_OK(tf_tensor_transpose(root_hs, perm, &lhs_h));
    tf_tensor *out_v = NULL, *out_c = NULL, *ballast = NULL;
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 3, out_shape, &out_v)); /* 64 KiB */
    int64_t bn = 128 * KIB;
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &bn, &ballast)); /* 512 KiB: 128 KiB left */
    fill(e, out_v, 7.0);
    tf_dot_general_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.n_contracting = 1;
    p.lhs_contracting[0] = 2;
    p.rhs_contracting[0] = 0;
    tf_tensor *vin[2] = {lhs_v, rhs_v};
    TF_ASSERT_STATUS(tf_engine_execute(e, TF_PRIM_DOT_GENERAL, &p, 2, vin, 1, &out_v),
                     TF_ERR_OUT_OF_MEMORY);
    assert_cause("262144 bytes asked for");
    assert_all(e, out_v, 7.0f);
    tf_tensor_release(ballast);
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_DOT_GENERAL, &p, 2, vin, 1, &out_v));
    TF_ASSERT_OK(tf_tensor_empty(vk_cpu, TF_F32, 3, out_shape, &out_c));
    tf_tensor *cin[2] = {lhs_h, rhs_h};
    TF_ASSERT_OK(tf_engine_execute(vk_cpu, TF_PRIM_DOT_GENERAL, &p, 2, cin, 1, &out_c));
    float *want = read_f32(vk_cpu, out_c), *got = read_f32(e, out_v);
    for (size_t i = 0; i < 16 * 16 * 64; i++) {
        if (fabsf(got[i] - want[i]) > 1e-5f * 256 * (1 + fabsf(want[i])))
            fail_msg("element %zu: vulkan %g, cpu %g", i, got[i], want[i]);
    }
    free(want);
    free(got);
    tf_tensor *all[] = {root_h, rhs_flat, root_hs, rhs_h, root_v,
                        rhs_v,  lhs_v,    lhs_h,   out_v, out_c};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_tensor_release(all[i]);
    tf_engine_destroy(e);
    vk_assert_validation_clean();
}

/* ---- exhaustion in eager ops and in backward -------------------------------------------- */

#define EN (16 * KIB) /* elements of every eager value: 64 KiB of f32 */

typedef struct eager_fixture {
    tf_engine *e;
    tf_runtime *rt;
    tf_eager *x, *w, *seed;
    float *xv, *wv; /* host copies */
} eager_fixture;

static tf_eager *eager_on(eager_fixture *f, const tf_tensor *host, int variable)
{
    tf_tensor *t = NULL;
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_engine_upload(f->e, host, &t));
    if (variable)
        TF_ASSERT_OK(tf_runtime_variable_from(f->rt, t, &x));
    else
        TF_ASSERT_OK(tf_runtime_constant_from(f->rt, t, &x));
    tf_tensor_release(t);
    return x;
}

/* y1 = x * w, y2 = tanh(y1), y3 = y2 + x; *done counts the ops that succeeded. */
static tf_status forward(eager_fixture *f, tf_eager *y[3], int *done)
{
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(f->rt, f->e, &s));
    *done = 0;
    tf_status st = TF_OK;
    for (int i = 0; i < 3 && st == TF_OK; i++) {
        y[i] = SENTINEL_E;
        tf_error_clear();
        st = i == 0   ? tf_session_mul(s, f->x, f->w, &y[0])
             : i == 1 ? tf_session_tanh(s, y[0], &y[1])
                      : tf_session_add(s, y[1], f->x, &y[2]);
        if (st == TF_OK)
            (*done)++;
    }
    tf_session_end(s);
    return st;
}

static void release_eager(tf_eager **y, int n)
{
    for (int i = 0; i < n; i++)
        tf_eager_release(y[i]);
}

/* The values before the fault are intact: y1 exactly, y2 and y3 to the tanh tolerance. */
static void check_forward_values(eager_fixture *f, tf_eager *const *y, int done)
{
    for (int i = 0; i < done; i++) {
        float *v = read_f32(f->e, tf_eager_value(y[i]));
        for (int j = 0; j < EN; j++) {
            float p = f->xv[j] * f->wv[j];
            float want = i == 0 ? p : i == 1 ? tanhf(p) : tanhf(p) + f->xv[j];
            if (i == 0 ? v[j] != want : fabsf(v[j] - want) > 2e-5f * fabsf(want) + 1e-6f)
                fail_msg("y%d[%d] = %g, want %g", i + 1, j, v[j], want);
        }
        free(v);
    }
}

/* The grad slot of v, downloaded (NULL when empty). */
static float *slot(eager_fixture *f, tf_eager *v)
{
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(v, &g));
    if (g == NULL)
        return NULL;
    float *r = read_f32(f->e, g);
    tf_tensor_release(g);
    return r;
}

static void assert_slot(eager_fixture *f, tf_eager *v, const float *want, float factor)
{
    float *got = slot(f, v);
    assert_non_null(got);
    for (int j = 0; j < EN; j++) {
        if (got[j] != factor * want[j]) {
            float g = got[j];
            free(got);
            fail_msg("grad slot[%d] = %g, want %g", j, g, factor * want[j]);
        }
    }
    free(got);
}

static void eager_setup(eager_fixture *f)
{
    f->e = vk_open1("memory_limit", "1m");
    TF_ASSERT_OK(tf_runtime_create(&f->rt));
    tf_tensor *xh = host_f32(EN, 6), *wh = host_f32(EN, 5), *ch = host_f32(EN, 2);
    f->x = eager_on(f, xh, 1);
    f->w = eager_on(f, wh, 1);
    f->seed = eager_on(f, ch, 0);
    f->xv = malloc(EN * sizeof *f->xv);
    f->wv = malloc(EN * sizeof *f->wv);
    TF_ASSERT_OK(tf_tensor_copy_to_host(xh, TF_F32, f->xv, EN));
    TF_ASSERT_OK(tf_tensor_copy_to_host(wh, TF_F32, f->wv, EN));
    tf_tensor_release(xh);
    tf_tensor_release(wh);
    tf_tensor_release(ch);
}

static void eager_teardown(eager_fixture *f)
{
    tf_eager_release(f->x);
    tf_eager_release(f->w);
    tf_eager_release(f->seed);
    tf_runtime_release(f->rt);
    tf_engine_destroy(f->e);
    free(f->xv);
    free(f->wv);
}

/*
 * x, w, the seed and two grad slots hold 320 KiB of the 1 MiB limit. For
 * ballast of B x 64 KiB, B = 11, 10, ... until a forward and backward pass
 * succeeds: each failure must be TF_ERR_OUT_OF_MEMORY with the failing op's
 * output unwritten, the values before it intact and still differentiable, and
 * a failed backward must leave both (non-empty) grad slots exactly as they
 * were. Both kinds of failure must have happened.
 */
static void test_limit_eager(void **state)
{
    (void)state;
    eager_fixture f;
    eager_setup(&f);
    int forward_failures = 0, backward_failures = 0, ok = 0;
    for (int b = 11; b >= 0 && !ok; b--) {
        /* Non-empty slots: one good pass first, with no ballast. */
        TF_ASSERT_OK(tf_runtime_clear_grads(f.rt));
        tf_eager *y[3];
        int done;
        TF_ASSERT_OK(forward(&f, y, &done));
        TF_ASSERT_OK(tf_eager_backward_with_seed(y[2], f.seed, f.e));
        release_eager(y, done);
        float *gx = slot(&f, f.x), *gw = slot(&f, f.w);
        assert_non_null(gx);
        assert_non_null(gw);

        /* Ballast in 64 KiB pieces, so holes left by freed values are filled too; a piece
           that does not fit any more is simply not added. */
        tf_tensor *ballast[11] = {NULL};
        int64_t bn = EN;
        for (int k = 0; k < b; k++) {
            tf_status bs = tf_tensor_empty(f.e, TF_F32, 1, &bn, &ballast[k]);
            if (bs != TF_OK) {
                TF_ASSERT_STATUS(bs, TF_ERR_OUT_OF_MEMORY);
                break;
            }
        }
        tf_status st = forward(&f, y, &done);
        if (st != TF_OK) {
            TF_ASSERT_STATUS(st, TF_ERR_OUT_OF_MEMORY);
            assert_cause("bytes asked for");
            assert_ptr_equal(y[done], SENTINEL_E);
            check_forward_values(&f, y, done);
            forward_failures++;
        } else {
            tf_error_clear();
            st = tf_eager_backward_with_seed(y[2], f.seed, f.e);
            if (st != TF_OK) {
                TF_ASSERT_STATUS(st, TF_ERR_OUT_OF_MEMORY);
                assert_cause("memory_limit");
                backward_failures++;
            } else {
                ok = 1;
            }
        }
        /* The slots hold exactly g (failure) or g + g (success). */
        assert_slot(&f, f.x, gx, ok ? 2.0f : 1.0f);
        assert_slot(&f, f.w, gw, ok ? 2.0f : 1.0f);
        for (int k = 0; k < 11; k++)
            tf_tensor_release(ballast[k]);
        if (!ok && done > 0) {
            /* The tape survived: a vjp through the last value computed works now. */
            tf_eager *d = NULL;
            TF_ASSERT_OK(tf_runtime_vjp(f.rt, f.e, y[done - 1], f.x, f.seed, &d));
            tf_eager_release(d);
        }
        release_eager(y, done);
        free(gx);
        free(gw);
    }
    print_message("eager: %d forward and %d backward out-of-memory failures before success\n",
                  forward_failures, backward_failures);
    assert_true(ok);
    assert_true(forward_failures > 0);
    assert_true(backward_failures > 0);
    eager_teardown(&f);
    vk_assert_validation_clean();
}

/* ---- injected driver failures ------------------------------------------------------------ */

/* vkQueueSubmit out of memory: the batch is kept, the next call submits it, nothing is lost. */
static void test_submit_oom(void **state)
{
    (void)state;
    tf_engine *e = vk_open1("debug_fail", "submit_oom@1");
    tf_tensor *ah = host_f32(5000, 1), *a = NULL, *b = NULL, *back = SENTINEL_T;
    int64_t n = 5000;
    TF_ASSERT_OK(tf_engine_upload(e, ah, &a));
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &b));
    tf_unary_params neg = {sizeof neg, TF_UNARY_NEG};
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_UNARY, &neg, 1, &a, 1, &b));
    TF_ASSERT_STATUS(tf_engine_download(e, a, &back), TF_ERR_OUT_OF_MEMORY);
    assert_ptr_equal(back, SENTINEL_T);
    assert_cause("vkQueueSubmit");
    assert_cause("VK_ERROR_OUT_OF_DEVICE_MEMORY");
    /* The upload and the op recorded before the failure still happen, in order. */
    assert_same_values(e, a, ah);
    float *av = read_f32(e, a), *bv = read_f32(e, b);
    for (int i = 0; i < 5000; i++)
        assert_true(bv[i] == -av[i]);
    free(av);
    free(bv);
    TF_ASSERT_OK(tf_engine_synchronize(e));
    tf_tensor_release(a);
    tf_tensor_release(b);
    tf_tensor_release(ah);
    tf_engine_destroy(e);

    /* The same through synchronize. */
    e = vk_open1("debug_fail", "submit_oom@2");
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &b));
    fill(e, b, 1.0);
    TF_ASSERT_OK(tf_engine_synchronize(e));
    fill(e, b, 3.0);
    TF_ASSERT_STATUS(tf_engine_synchronize(e), TF_ERR_OUT_OF_MEMORY);
    TF_ASSERT_OK(tf_engine_synchronize(e));
    assert_all(e, b, 3.0f);
    tf_tensor_release(b);
    tf_engine_destroy(e);
    vk_assert_validation_clean();
}

/* vkAllocateMemory out of device memory: typed, with the heap; a smaller block is tried. */
static void test_alloc_oom(void **state)
{
    (void)state;
    /* The request is the whole limit, so there is no smaller block to try. */
    tf_engine *e = vk_open2("memory_limit", "1m", "debug_fail", "alloc_oom@1");
    int64_t n = 256 * KIB;
    tf_tensor *t = SENTINEL_T;
    TF_ASSERT_STATUS(tf_tensor_empty(e, TF_F32, 1, &n, &t), TF_ERR_OUT_OF_MEMORY);
    assert_ptr_equal(t, SENTINEL_T);
    assert_cause("1048576 bytes asked for");
    assert_cause("vkAllocateMemory on heap");
    assert_cause("VK_ERROR_OUT_OF_DEVICE_MEMORY");
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &t));
    fill(e, t, 4.0);
    assert_all(e, t, 4.0f);
    tf_tensor_release(t);
    tf_engine_destroy(e);

    /* A 64 MiB block refused: a block of exactly the request is made instead. */
    e = vk_open1("debug_fail", "alloc_oom@1");
    int64_t small = 1000;
    tf_tensor *u = NULL, *v = NULL;
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &small, &u));
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &small, &v)); /* the next one: a whole block */
    fill(e, u, 5.0);
    fill(e, v, 6.0);
    assert_all(e, u, 5.0f);
    assert_all(e, v, 6.0f);
    tf_tensor_release(u);
    tf_tensor_release(v);
    tf_engine_destroy(e);
    vk_assert_validation_clean();
}

/* ---- lost device -------------------------------------------------------------------------- */

/* After the loss every call but freeing answers TF_ERR_DEVICE_LOST; destroy works. */
static void assert_engine_lost(tf_engine *e, tf_tensor *a, tf_tensor *b)
{
    tf_tensor *out = SENTINEL_T, *h = host_f32(10, 0);
    int64_t n = 10;
    TF_ASSERT_STATUS(tf_engine_download(e, a, &out), TF_ERR_DEVICE_LOST);
    assert_cause("unusable");
    TF_ASSERT_STATUS(tf_engine_upload(e, h, &out), TF_ERR_DEVICE_LOST);
    TF_ASSERT_STATUS(tf_tensor_empty(e, TF_F32, 1, &n, &out), TF_ERR_DEVICE_LOST);
    TF_ASSERT_STATUS(tf_engine_synchronize(e), TF_ERR_DEVICE_LOST);
    tf_unary_params neg = {sizeof neg, TF_UNARY_NEG};
    TF_ASSERT_STATUS(tf_engine_execute(e, TF_PRIM_UNARY, &neg, 1, &a, 1, &b), TF_ERR_DEVICE_LOST);
    assert_ptr_equal(out, SENTINEL_T);
    assert_int_equal(tf_error_status(), TF_ERR_DEVICE_LOST);
    tf_tensor_release(h);
}

/* A new engine on the same device works. */
static void assert_new_engine_works(void)
{
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open("vulkan", 0, &e));
    tf_tensor *h = host_f32(300, 2), *a = NULL, *b = NULL;
    TF_ASSERT_OK(tf_engine_upload(e, h, &a));
    int64_t n = 300;
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &b));
    tf_unary_params neg = {sizeof neg, TF_UNARY_NEG};
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_UNARY, &neg, 1, &a, 1, &b));
    float *av = read_f32(e, a), *bv = read_f32(e, b);
    for (int i = 0; i < 300; i++)
        assert_true(bv[i] == -av[i]);
    free(av);
    free(bv);
    tf_tensor_release(a);
    tf_tensor_release(b);
    tf_tensor_release(h);
    tf_engine_destroy(e);
}

static void test_device_lost(void **state)
{
    (void)state;
    /* Lost at a submit: the second one, made by synchronize. */
    tf_engine *e = vk_open1("debug_fail", "device_lost@2");
    tf_tensor *ah = host_f32(4000, 1), *a = NULL, *b = NULL;
    int64_t n = 4000;
    TF_ASSERT_OK(tf_engine_upload(e, ah, &a));
    assert_same_values(e, a, ah); /* submit 1 */
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &b));
    tf_unary_params neg = {sizeof neg, TF_UNARY_NEG};
    TF_ASSERT_OK(tf_engine_execute(e, TF_PRIM_UNARY, &neg, 1, &a, 1, &b));
    TF_ASSERT_STATUS(tf_engine_synchronize(e), TF_ERR_DEVICE_LOST);
    assert_cause("vkQueueSubmit: VK_ERROR_DEVICE_LOST");
    assert_engine_lost(e, a, b);
    tf_tensor_release(b); /* freeing still works, pending work or not */
    tf_engine_destroy(e); /* a still holds the engine */
    tf_tensor_release(a);

    /* Lost while waiting for a fence, with work in flight. */
    e = vk_open1("debug_fail", "wait_lost@1");
    TF_ASSERT_OK(tf_engine_upload(e, ah, &a));
    TF_ASSERT_OK(tf_tensor_empty(e, TF_F32, 1, &n, &b));
    tf_tensor *back = SENTINEL_T;
    TF_ASSERT_STATUS(tf_engine_download(e, a, &back), TF_ERR_DEVICE_LOST);
    assert_ptr_equal(back, SENTINEL_T);
    assert_cause("vkWaitForFences: VK_ERROR_DEVICE_LOST");
    assert_engine_lost(e, a, b);
    tf_tensor_release(a);
    tf_tensor_release(b);
    tf_engine_destroy(e);
    tf_tensor_release(ah);

    assert_new_engine_works();
    vk_assert_validation_clean();
}

/*
 * Eager ops on an engine lost when a batch fills (the 513th dispatch forces
 * the first submit): the op that meets the loss and every later one fail with
 * TF_ERR_DEVICE_LOST without writing their output; the grad slot keeps the
 * same tensor; a backward fails the same way; the runtime then works on a
 * new engine.
 */
static void test_device_lost_eager(void **state)
{
    (void)state;
    tf_engine *e = vk_open1("debug_fail", "device_lost@1");
    tf_runtime *rt = NULL;
    TF_ASSERT_OK(tf_runtime_create(&rt));
    tf_tensor *xh = host_f32(256, 1), *xt = NULL;
    TF_ASSERT_OK(tf_engine_upload(e, xh, &xt));
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_runtime_variable_from(rt, xt, &x));
    tf_tensor_release(xt);
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_session_begin(rt, e, &s));
    /* one dispatch per op, so that the chain below reaches a submission (deferred
       chains fail where their batch runs: tests/runtime/test_defer_faults.c) */
    TF_ASSERT_OK(tf_session_set_defer(s, TF_DEFER_OFF));
    /* A slot to keep: the gradient of sum(x * x). */
    tf_eager *sq = NULL, *loss = NULL;
    int axes[1] = {0};
    TF_ASSERT_OK(tf_session_mul(s, x, x, &sq));
    TF_ASSERT_OK(tf_session_reduce_sum(s, sq, axes, 1, &loss));
    TF_ASSERT_OK(tf_eager_backward(loss, e));
    tf_tensor *slot_before = NULL, *slot_after = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &slot_before));
    assert_non_null(slot_before);

    tf_eager *chain[700];
    int n = 0;
    tf_status st = TF_OK;
    chain[0] = x;
    tf_eager_retain(x);
    for (n = 1; n < 700; n++) {
        chain[n] = SENTINEL_E;
        st = tf_session_add(s, chain[n - 1], x, &chain[n]);
        if (st != TF_OK)
            break;
    }
    TF_ASSERT_STATUS(st, TF_ERR_DEVICE_LOST);
    assert_ptr_equal(chain[n], SENTINEL_E);
    assert_cause("vkQueueSubmit: VK_ERROR_DEVICE_LOST");
    print_message("device lost at eager op %d\n", n);
    tf_eager *z = SENTINEL_E;
    TF_ASSERT_STATUS(tf_session_tanh(s, chain[n - 1], &z), TF_ERR_DEVICE_LOST);
    assert_ptr_equal(z, SENTINEL_E);
    TF_ASSERT_STATUS(tf_eager_backward(loss, e), TF_ERR_DEVICE_LOST);
    TF_ASSERT_OK(tf_eager_grad(x, &slot_after));
    assert_ptr_equal(slot_after, slot_before); /* the slot was not touched */
    tf_tensor_release(slot_before);
    tf_tensor_release(slot_after);
    tf_session_end(s);
    release_eager(chain, n);
    tf_eager_release(sq);
    tf_eager_release(loss);
    tf_engine_destroy(e);

    /* The same runtime on a new engine: x's slot still holds the lost engine's tensor, so
       it is cleared first; then a fresh variable gets d sum(v * v) / dv = 2 v. */
    TF_ASSERT_OK(tf_runtime_clear_grads(rt));
    tf_eager_release(x);
    TF_ASSERT_OK(tf_engine_open("vulkan", 0, &e));
    TF_ASSERT_OK(tf_engine_upload(e, xh, &xt));
    TF_ASSERT_OK(tf_runtime_variable_from(rt, xt, &x));
    tf_tensor_release(xt);
    TF_ASSERT_OK(tf_session_begin(rt, e, &s));
    TF_ASSERT_OK(tf_session_mul(s, x, x, &sq));
    TF_ASSERT_OK(tf_session_reduce_sum(s, sq, axes, 1, &loss));
    TF_ASSERT_OK(tf_eager_backward(loss, e));
    tf_session_end(s);
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    float *gv = read_f32(e, g), xv[256];
    TF_ASSERT_OK(tf_tensor_copy_to_host(xh, TF_F32, xv, 256));
    for (int i = 0; i < 256; i++)
        assert_true(gv[i] == 2.0f * xv[i]);
    free(gv);
    tf_tensor_release(g);
    tf_eager_release(sq);
    tf_eager_release(loss);
    tf_eager_release(x);
    tf_tensor_release(xh);
    tf_runtime_release(rt);
    tf_engine_destroy(e);
    vk_assert_validation_clean();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_limit_upload),
        cmocka_unit_test(test_limit_reclaims_deferred),
        cmocka_unit_test(test_limit_execute),
        cmocka_unit_test(test_limit_eager),
        cmocka_unit_test(test_submit_oom),
        cmocka_unit_test(test_alloc_oom),
        cmocka_unit_test(test_device_lost),
        cmocka_unit_test(test_device_lost_eager),
    };
    return cmocka_run_group_tests_name("vulkan faults", tests, vk_group_setup, vk_group_teardown);
}
