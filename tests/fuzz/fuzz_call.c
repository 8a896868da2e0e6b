/*
 * fuzz_call.c - calling extension ops by name (tf_session_call).
 *
 * One runtime with two modules installed: the linalg module
 * (tenferro.linalg.*) and the tests' fixture module (tenferro.fixture.scale,
 * .noad), both loaded once from the build tree. Each input decodes into a
 * few calls: an op name (an installed one, a near miss, or raw bytes), an
 * argument count, each argument's kind (including codes that are no kind),
 * its tensor (from a fixed pool of every dtype and ranks 0 to 3, empty ones,
 * one from another runtime, or NULL) or scalar (NaN, infinities, extremes),
 * and the room for outputs. A call must either succeed with that many new
 * outputs or refuse with a documented status and leave `outputs` alone;
 * kernel failures (a singular matrix) are fine, engine failures are not.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/extension.h>
#include <tenferro/runtime.h>
#include <tenferro/tenferro.h>

#include "fuzz_common.h"

static const char *const k_ops[] = {
    "tenferro.linalg.cholesky", "tenferro.linalg.solve", "tenferro.linalg.triangular_solve",
    "tenferro.linalg.inv",      "tenferro.linalg.det",   "tenferro.linalg.slogdet",
    "tenferro.linalg.qr",       "tenferro.linalg.eigh",  "tenferro.linalg.lstsq",
    "tenferro.linalg.svd",      "tenferro.linalg.pinv",  "tenferro.linalg.norm",
    "tenferro.fixture.scale",   "tenferro.fixture.noad", "tenferro.linalg",
    "tenferro.fixture",         "linalg.solve",          "",
};
#define N_OPS (sizeof k_ops / sizeof k_ops[0])

#define POOL 24
static tf_runtime *g_rt, *g_other_rt;
static tf_engine *g_engine;
static tf_session *g_s, *g_other_s;
static tf_eager *g_pool[POOL];
static size_t g_pool_n;

/* A constant of the pool: `shape` column-major, values a well-conditioned matrix pattern. */
static void add_constant(tf_session *s, tf_dtype dtype, size_t rank, const int64_t *shape)
{
    double v[64];
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    int64_t rows = rank >= 2 ? shape[rank - 2] : 1;
    for (size_t i = 0; i < n; i++) /* 4 on a diagonal, 1 elsewhere: SPD when square */
        v[i] = rows > 0 && (i % (size_t)rows) == (i / (size_t)rows) % (size_t)rows ? 4.0 : 1.0;
    unsigned char bytes[64 * 8];
    for (size_t i = 0; i < n; i++) {
        switch (dtype) {
        case TF_F32: ((float *)bytes)[i] = (float)v[i]; break;
        case TF_F64: ((double *)bytes)[i] = v[i]; break;
        case TF_I32: ((int32_t *)bytes)[i] = (int32_t)v[i]; break;
        case TF_I64: ((int64_t *)bytes)[i] = (int64_t)v[i]; break;
        default: bytes[i] = 1; break;
        }
    }
    tf_tensor *t;
    FZ_CHECK(tf_tensor_from_host(dtype, rank, shape, bytes, n, &t) == TF_OK, "pool tensor: %s",
             tf_error_message());
    FZ_CHECK(g_pool_n < POOL, "pool full");
    FZ_CHECK(tf_session_constant_from_host(s, t, &g_pool[g_pool_n++]) == TF_OK, "constant: %s",
             tf_error_message());
    tf_tensor_release(t);
}

static void install(const char *name)
{
    tf_extension_module *m;
    tf_epoch epoch;
    FZ_CHECK(tf_extension_load(name, &m) == TF_OK, "load %s: %s: %s", name, tf_error_message(),
             tf_error_cause());
    FZ_CHECK(tf_runtime_install_extension_module(g_rt, m, &epoch) == TF_OK, "install %s: %s", name,
             tf_error_message());
}

static void setup(void)
{
    fz_setup_environment();
    FZ_CHECK(tf_engine_open("cpu", 1, &g_engine) == TF_OK, "engine: %s: %s", tf_error_message(),
             tf_error_cause());
    FZ_CHECK(tf_runtime_create(&g_rt) == TF_OK, "runtime: %s", tf_error_message());
    install("linalg");
    install("fx_fixture");
    FZ_CHECK(tf_session_begin(g_rt, g_engine, &g_s) == TF_OK, "session: %s", tf_error_message());
    static const int64_t s3[] = {3}, s22[] = {2, 2}, s33[] = {3, 3}, s32[] = {3, 2}, s23[] = {2, 3},
                         s222[] = {2, 2, 2}, s133[] = {1, 3, 3}, s02[] = {0, 2}, s00[] = {0, 0},
                         s31[] = {3, 1};
    add_constant(g_s, TF_F64, 0, NULL);
    add_constant(g_s, TF_F64, 1, s3);
    add_constant(g_s, TF_F64, 2, s22);
    add_constant(g_s, TF_F64, 2, s33);
    add_constant(g_s, TF_F64, 2, s32);
    add_constant(g_s, TF_F64, 2, s23);
    add_constant(g_s, TF_F64, 3, s222);
    add_constant(g_s, TF_F64, 3, s133);
    add_constant(g_s, TF_F64, 2, s02);
    add_constant(g_s, TF_F64, 2, s00);
    add_constant(g_s, TF_F64, 2, s31);
    add_constant(g_s, TF_F32, 2, s33);
    add_constant(g_s, TF_F32, 2, s22);
    add_constant(g_s, TF_F32, 1, s3);
    add_constant(g_s, TF_I32, 2, s22);
    add_constant(g_s, TF_I64, 2, s33);
    add_constant(g_s, TF_BOOL, 2, s22);
    /* a constant of another runtime: every call with it is a context mismatch */
    FZ_CHECK(tf_runtime_create(&g_other_rt) == TF_OK, "runtime: %s", tf_error_message());
    FZ_CHECK(tf_session_begin(g_other_rt, g_engine, &g_other_s) == TF_OK, "session: %s",
             tf_error_message());
    add_constant(g_other_s, TF_F64, 2, s22);
    tf_session_end(g_other_s);
}

static double pick_f64(fz_reader *r)
{
    static const double k[] = {0.0, 1.0, -1.0, 1e-300, 1e308, -0.0};
    uint8_t b = fz_u8(r);
    switch (b % 10) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: {
        uint64_t bits = fz_u64(r);
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    default: return k[b % 6];
    }
}

static int64_t pick_i64(fz_reader *r)
{
    uint8_t b = fz_u8(r);
    switch (b % 6) {
    case 0: return INT64_MAX;
    case 1: return INT64_MIN;
    case 2: return -1;
    case 3: return (int64_t)fz_u64(r);
    default: return b % 3;
    }
}

static const char *pick_name(fz_reader *r, char *buf, size_t cap)
{
    uint8_t how = fz_u8(r);
    const char *base = k_ops[how % N_OPS];
    if (how < 200)
        return base;
    if (how < 230) { /* a near miss: the name with one byte changed or cut */
        snprintf(buf, cap, "%s", base);
        size_t n = strlen(buf);
        if (n) {
            size_t at = fz_below(r, (uint32_t)n);
            uint8_t c = fz_u8(r);
            if (c == 0)
                buf[at] = '\0';
            else
                buf[at] = (char)c;
        }
        return buf;
    }
    if (how < 250) {
        fz_string(r, buf, cap);
        return buf;
    }
    return NULL;
}

static void check_refusal(const char *name, tf_status st)
{
    FZ_CHECK(st == TF_ERR_VALIDATION || st == TF_ERR_DTYPE_MISMATCH ||
                 st == TF_ERR_SHAPE_MISMATCH || st == TF_ERR_CONTEXT_MISMATCH ||
                 st == TF_ERR_UNSUPPORTED || st == TF_ERR_EXTENSION || st == TF_ERR_OUT_OF_RANGE ||
                 st == TF_ERR_AXIS_OUT_OF_BOUNDS || st == TF_ERR_OUT_OF_MEMORY,
             "call %s: unexpected status %s: %s (%s)", name ? name : "(null)", tf_status_name(st),
             tf_error_message(), tf_error_cause());
    FZ_CHECK(tf_error_message()[0] != '\0', "%s without a message", tf_status_name(st));
}

static void one_call(fz_reader *r)
{
    char name_buf[160];
    const char *name = pick_name(r, name_buf, sizeof name_buf);
    tf_call_arg args[12];
    memset(args, 0, sizeof args); /* kinds 3 and 4 (string, list) read str and tensors */
    size_t n_args = fz_u8(r) < 250 ? fz_below(r, 5) : fz_below(r, 13);
    for (size_t i = 0; i < n_args; i++) {
        uint8_t k = fz_u8(r);
        args[i].kind = k < 240 ? k % 3 : k < 250 ? 3 : fz_u32(r);
        uint8_t t = fz_u8(r);
        args[i].tensor = t < 8 ? NULL : g_pool[t % g_pool_n];
        args[i].f = pick_f64(r);
        args[i].i = pick_i64(r);
    }
    int null_args = n_args > 0 && fz_u8(r) == 255;
    tf_eager *sentinel = (tf_eager *)&g_pool_n, *outputs[6];
    size_t n_out = fz_below(r, 6);
    for (size_t i = 0; i < 6; i++)
        outputs[i] = sentinel;
    int null_out = fz_u8(r) == 255;
    tf_status st = tf_session_call(g_s, name, null_args ? NULL : args, n_args,
                                   null_out ? NULL : outputs, n_out);
    if (getenv("TF_FUZZ_VERBOSE")) /* what a corpus exercises, for people reading it */
        fprintf(stderr, "call %s (%zu args, %zu outputs): %s\n", name ? name : "(null)", n_args,
                n_out, tf_status_name(st));
    for (size_t i = n_out; i < 6; i++)
        FZ_CHECK(outputs[i] == sentinel, "call %s wrote past its %zu outputs", name, n_out);
    if (st) {
        check_refusal(name, st);
        for (size_t i = 0; i < n_out; i++)
            FZ_CHECK(outputs[i] == sentinel, "call %s wrote output %zu on failure", name, i);
        return;
    }
    FZ_CHECK(name && !null_args && !null_out, "a call with NULL arguments succeeded");
    for (size_t i = 0; i < n_out; i++) {
        FZ_CHECK(outputs[i] != sentinel && outputs[i] != NULL, "call %s: output %zu missing", name,
                 i);
        tf_tensor *v = tf_eager_value(outputs[i]);
        FZ_CHECK(v != NULL && tf_tensor_rank(v) <= TF_MAX_RANK, "output %zu value", i);
        tf_eager_release(outputs[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_s)
        setup();
    fz_reader r = {data, size};
    for (int k = 0; k < 4 && (k == 0 || r.n); k++)
        one_call(&r);
    return 0;
}
