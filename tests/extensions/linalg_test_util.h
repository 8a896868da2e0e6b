/*
 * linalg_test_util.h - what the tests of the tenferro.linalg module share
 * (test_linalg.c: f32/f64; test_linalg_complex.c, test_linalg_complex_ad.c:
 * c64/c128): the module loaded once per group, a runtime with it
 * installed, calling an op by its short name, and asserting its typed
 * failures. Static functions: each test program includes it once.
 */
#ifndef TF_LINALG_TEST_UTIL_H
#define TF_LINALG_TEST_UTIL_H

#include <stdio.h>
#include <string.h>

#include "ext_test_util.h"

static tf_extension_module *g_linalg;

/* Opens the CPU engine and loads the linalg module. */
static inline int setup(void **state)
{
    if (tft_cpu_setup(state))
        return -1;
    return tf_extension_load("linalg", &g_linalg) == TF_OK ? 0 : -1;
}

/* Installs linalg into s's runtime (a no-op when it is there already). */
static inline void ensure(tf_session *s)
{
    tf_epoch e;
    TF_ASSERT_OK(tf_runtime_install_extension_module(tf_session_runtime(s), g_linalg, &e));
}

/* A runtime and session on g_cpu with linalg installed; end it with tft_env_end. */
static inline tft_env linalg_env_begin(void)
{
    tft_env e = tft_env_begin();
    ensure(e.s);
    return e;
}

static inline tf_status call1(tf_session *s, const char *op, tf_eager *a, tf_eager *b, int64_t lower,
                       tf_eager **out)
{
    char name[64];
    snprintf(name, sizeof name, "tenferro.linalg.%s", op);
    tf_call_arg args[3] = {TF_ARG_TENSOR(a), TF_ARG_TENSOR(b), TF_ARG_I64(lower)};
    size_t n = b ? (lower >= 0 ? 3 : 2) : 1;
    return tf_session_call(s, name, args, n, out, 1);
}

/* The last failure is linalg's typed error `kind` from `op`, about batch element `index`. */
static inline void expect_kind(const char *op, const char *kind, int64_t index)
{
    const char *mod = NULL, *k = NULL;
    int64_t i = -2;
    assert_int_equal(tf_error_status(), TF_ERR_EXTENSION);
    assert_true(tf_error_extension_kind(&mod, &k, &i));
    assert_string_equal(mod, "tenferro.linalg");
    assert_string_equal(k, kind);
    assert_int_equal(i, index);
    char full[64];
    snprintf(full, sizeof full, "tenferro.linalg.%s", op);
    assert_string_equal(tf_error_op(), full);
    if (!strstr(tf_error_message(), full) || !strstr(tf_error_message(), kind))
        fail_msg("message '%s' lacks '%s' or '%s'", tf_error_message(), full, kind);
    char batch[48];
    snprintf(batch, sizeof batch, "batch element %lld", (long long)index);
    if (!strstr(tf_error_cause(), full) || !strstr(tf_error_cause(), batch))
        fail_msg("cause '%s' lacks '%s' or '%s'", tf_error_cause(), full, batch);
}

/* Calls op (one or two tensors, optional scalar) expecting a typed failure;
   the output slots are never written and the registry stays as it was. */
static inline void expect_call_kind(tft_env *e, const char *op, tf_eager *a, tf_eager *b,
                             const tf_call_arg *scalar, size_t n_out, const char *kind,
                             int64_t index)
{
    char name[64];
    snprintf(name, sizeof name, "tenferro.linalg.%s", op);
    tf_call_arg args[3] = {TF_ARG_TENSOR(a)};
    size_t n = 1;
    if (b)
        args[n++] = TF_ARG_TENSOR(b);
    if (scalar)
        args[n++] = *scalar;
    tf_eager *sentinel = (tf_eager *)(uintptr_t)1, *outs[3] = {sentinel, sentinel, sentinel};
    tf_epoch epoch = tf_runtime_epoch(e->rt);
    uint64_t pubs = tf_runtime_extension_publish_count(e->rt);
    TF_ASSERT_STATUS(tf_session_call(e->s, name, args, n, outs, n_out), TF_ERR_EXTENSION);
    expect_kind(op, kind, index);
    for (int i = 0; i < 3; i++)
        assert_ptr_equal(outs[i], sentinel);
    assert_int_equal(tf_runtime_epoch(e->rt), epoch);
    assert_int_equal(tf_runtime_extension_publish_count(e->rt), pubs);
    assert_true(tf_runtime_has_op(e->rt, name));
}

#endif /* TF_LINALG_TEST_UTIL_H */
