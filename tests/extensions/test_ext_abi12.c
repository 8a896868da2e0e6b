/*
 * test_ext_abi12.c - extension ABI 1.2 through its fixture (fixtures/
 * fixture_abi12.c): every ops-table entry it added gives what the same
 * session op gives and differentiates like it (finite differences in f64,
 * reverse and forward, and second order), a kernel op's rules written with
 * them, composite ops with string and tensor-list arguments (their checks,
 * their failures, nothing recorded or leaked when they fail), the module
 * cache in the runtime's stats, call_args, interfaces, and the install-time
 * refusals of misdeclared ops.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "ext_test_util.h"
#include "fx_abi12.h"
#include "tf_gradcheck.h"

static tf_extension_module *g_fx;

static int setup(void **state)
{
    if (tft_cpu_setup(state))
        return -1;
    return tf_extension_load(FX_PATH("abi12"), &g_fx) == TF_OK ? 0 : -1;
}

static void ensure(tf_session *s)
{
    tf_epoch e;
    TF_ASSERT_OK(tf_runtime_install_extension_module(tf_session_runtime(s), g_fx, &e));
}

/* A failed call left x's grad slot as it was: empty. */
static void expect_no_grad(tf_eager *x)
{
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(x, &g));
    assert_null(g);
}

static tf_status apply(tf_session *s, tf_eager *x, tf_eager *y, int code, tf_eager **out)
{
    tf_call_arg a[3] = {TF_ARG_TENSOR(x), TF_ARG_TENSOR(y), TF_ARG_I64(code)};
    return tf_session_call(s, FX12_ID ".apply", a, 3, out, 1);
}

/* ---- the reference: the same case with session ops ---- */

static tf_eager *i64_const(tf_session *s, size_t rank, const int64_t *shape, const int64_t *v,
                           size_t n)
{
    tf_tensor *t = tft_host(TF_I64, rank, shape, v, n);
    tf_eager *e = NULL;
    TF_ASSERT_OK(tf_session_constant_from_host(s, t, &e));
    tf_tensor_release(t);
    return e;
}

typedef tf_status (*unary_fn)(tf_session *, tf_eager *, tf_eager **);
typedef tf_status (*binary_fn)(tf_session *, tf_eager *, tf_eager *, tf_eager **);

static const unary_fn k_unary[] = {
    tf_session_neg,   tf_session_abs,   tf_session_sign, tf_session_exp,    tf_session_log,
    tf_session_expm1, tf_session_log1p, tf_session_sin,  tf_session_cos,    tf_session_tanh,
    tf_session_sqrt,  tf_session_rsqrt, tf_session_erf,  tf_session_sigmoid};
static const binary_fn k_binary[] = {tf_session_add,     tf_session_sub, tf_session_mul,
                                     tf_session_div,     tf_session_pow, tf_session_maximum,
                                     tf_session_minimum, tf_session_rem};
#define N_UNARY (int)(sizeof k_unary / sizeof k_unary[0])
#define N_BINARY (int)(sizeof k_binary / sizeof k_binary[0])

static tf_status ref_reduce(tf_session *s, int op, tf_eager *x, tf_eager **out)
{
    static const int ax[1] = {1};
    switch (op) {
    case 0: return tf_session_reduce_sum(s, x, ax, 1, out);
    case 1: return tf_session_reduce_prod(s, x, ax, 1, out);
    case 2: return tf_session_reduce_max(s, x, ax, 1, out);
    case 3: return tf_session_reduce_min(s, x, ax, 1, out);
    case 4: return tf_session_reduce_mean(s, x, ax, 1, out);
    case 5: return tf_session_reduce_sum_squares(s, x, ax, 1, out);
    default: return tf_session_logsumexp(s, x, ax, 1, out);
    }
}

/* Every eager tensor a reference case makes on the way; released together. */
typedef struct pool {
    tf_eager *t[8];
    int n;
} pool;

static tf_eager *keep(pool *p, tf_eager *t)
{
    p->t[p->n++] = t;
    return t;
}

static tf_status ref_misc(tf_session *s, int code, tf_eager *x, tf_eager *y, pool *p,
                          tf_eager **out)
{
    static const int64_t two[1] = {2}, three_two[2] = {3, 2}, four[1] = {4}, shape[2] = {3, 4};
    static const int64_t bshape[3] = {3, 2, 4}, s0[2] = {0, 1}, l0[2] = {3, 4}, st2[2] = {2, 2};
    static const int64_t lo[2] = {1, 0}, hi[2] = {0, 1}, in[2] = {0, 1}, sizes[2] = {2, 2};
    static const int64_t sel[2] = {3, 0}, along[6] = {0, 2, 1, 2, 3, 0}, starts[2] = {1, 1};
    static const int64_t z[2] = {0, 0}, ul[2] = {3, 2}, one[2] = {1, 1}, rl[2] = {1, 4};
    static const int64_t add_at[2] = {2, 2}, put_at[2] = {0, 2};
    static const double w4[4] = {1, 2, 3, 4};
    static const int bdims[2] = {0, 2}, ax1[1] = {1};
    tf_eager *xy[2] = {x, y}, *t = NULL, *u = NULL;
    tf_status st;
    switch (code) {
    case FX12_CLAMP:
        TF_ASSERT_OK(tf_session_scalar(s, TF_F64, 0.7, &t));
        TF_ASSERT_OK(tf_session_scalar(s, TF_F64, 1.2, &u));
        return tf_session_clamp(s, x, keep(p, t), keep(p, u), out);
    case FX12_CONVERT:
    case FX12_CAST:
        TF_ASSERT_OK(tf_session_cast(s, x, TF_F32, &t));
        return (code == FX12_CONVERT ? tf_session_convert : tf_session_cast)(s, keep(p, t), TF_F64,
                                                                             out);
    case FX12_DOT: {
        tf_dot_dims d;
        memset(&d, 0, sizeof d);
        d.n_contracting = d.n_batch = 1;
        d.lhs_contracting[0] = d.rhs_contracting[0] = 1;
        return tf_session_dot_general(s, x, y, &d, out);
    }
    case FX12_BROADCAST: return tf_session_broadcast_in_dim(s, x, 3, bshape, bdims, out);
    case FX12_REVERSE: return tf_session_reverse(s, x, ax1, 1, out);
    case FX12_SLICE: return tf_session_slice(s, x, s0, l0, st2, out);
    case FX12_DYNAMIC_SLICE:
        return tf_session_dynamic_slice(s, x, keep(p, i64_const(s, 1, two, starts, 2)), sizes, out);
    case FX12_INDEX_SELECT:
        return tf_session_index_select(s, x, 1, keep(p, i64_const(s, 1, two, sel, 2)), out);
    case FX12_ALONG_AXIS:
        return tf_session_take_along_axis(s, x, 1, keep(p, i64_const(s, 2, three_two, along, 6)),
                                          out);
    case FX12_SCATTER_ADD:
    case FX12_SCATTER_REPLACE:
        TF_ASSERT_OK(tf_session_slice(s, y, z, ul, one, &t));
        return tf_session_scatter(
            s, x, 1, keep(p, i64_const(s, 1, two, code == FX12_SCATTER_ADD ? add_at : put_at, 2)),
            keep(p, t), TF_GATHER_INDEX_SELECT,
            code == FX12_SCATTER_ADD ? TF_SCATTER_ADD : TF_SCATTER_REPLACE, out);
    case FX12_PAD: return tf_session_pad(s, x, lo, hi, in, 0.5, out);
    case FX12_CONCATENATE: return tf_session_concatenate(s, xy, 2, 1, out);
    case FX12_STACK: return tf_session_stack(s, xy, 2, 0, out);
    case FX12_SOFTMAX: return tf_session_softmax(s, x, 1, out);
    case FX12_LOG_SOFTMAX: return tf_session_log_softmax(s, x, 1, out);
    case FX12_SILU: return tf_session_silu(s, x, out);
    case FX12_GELU: return tf_session_gelu(s, x, out);
    case FX12_SOFTPLUS: return tf_session_softplus(s, x, out);
    case FX12_LAYER_NORM:
        TF_ASSERT_OK(tf_session_slice(s, y, z, rl, one, &t));
        TF_ASSERT_OK(tf_session_reshape(s, keep(p, t), 1, four, &u));
        return tf_session_layer_norm(s, x, 1, keep(p, u), NULL, 1e-5, out);
    case FX12_RMS_NORM: return tf_session_rms_norm(s, x, 1, NULL, 1e-6, out);
    case FX12_CONSTANT:
        TF_ASSERT_OK(tf_session_full(s, TF_F64, 2, shape, 0.25, &t));
        return tf_session_add(s, x, keep(p, t), out);
    default: {
        tf_tensor *h = tft_host(TF_F64, 1, four, w4, 4);
        st = tf_session_constant_from_host(s, h, &t);
        tf_tensor_release(h);
        TF_ASSERT_OK(st);
        return tf_session_mul(s, x, keep(p, t), out);
    }
    }
}

static tf_status ref_case(tf_session *s, int code, tf_eager *x, tf_eager *y, tf_eager **out)
{
    if (code < FX12_BINARY)
        return k_unary[code - FX12_UNARY](s, x, out);
    if (code < FX12_SELECT)
        return k_binary[code - FX12_BINARY](s, x, y, out);
    pool p = {{NULL}, 0};
    tf_status st;
    if (code < FX12_REDUCE) {
        tf_eager *m = NULL;
        TF_ASSERT_OK(tf_session_compare(s, x, y, (tf_compare_op)(code - FX12_SELECT), &m));
        st = tf_session_select(s, keep(&p, m), x, y, out);
    } else if (code < FX12_CLAMP) {
        st = ref_reduce(s, code - FX12_REDUCE, x, out);
    } else {
        st = ref_misc(s, code, x, y, &p, out);
    }
    for (int i = 0; i < p.n; i++)
        tf_eager_release(p.t[i]);
    return st;
}

/* Every case code of the fixture, in order. */
static int all_codes(int *codes)
{
    int n = 0;
    for (int k = 0; k < N_UNARY; k++)
        codes[n++] = FX12_UNARY + k;
    for (int k = 0; k < N_BINARY; k++)
        codes[n++] = FX12_BINARY + k;
    for (int k = 0; k < TF_COMPARE_COUNT_; k++)
        codes[n++] = FX12_SELECT + k;
    for (int k = 0; k <= TF_EXT_REDUCE_LOGSUMEXP; k++)
        codes[n++] = FX12_REDUCE + k;
    for (int k = FX12_CLAMP; k < FX12_CASE_END_; k++)
        codes[n++] = k;
    return n;
}

static tf_tensor *input(unsigned *seed)
{
    const int64_t shape[2] = {3, 4};
    return gc_random(2, shape, 0.5, 1.5, seed);
}

static void test_every_entry_matches_its_session_op(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    ensure(e.s);
    unsigned seed = 7;
    tf_tensor *hx = input(&seed), *hy = input(&seed);
    tf_eager *x = NULL, *y = NULL;
    TF_ASSERT_OK(tf_runtime_constant_from(e.rt, hx, &x));
    TF_ASSERT_OK(tf_runtime_constant_from(e.rt, hy, &y));
    int codes[128], n = all_codes(codes);
    for (int i = 0; i < n; i++) {
        tf_eager *got = NULL, *want = NULL;
        TF_ASSERT_OK(apply(e.s, x, y, codes[i], &got));
        TF_ASSERT_OK(ref_case(e.s, codes[i], x, y, &want));
        const tf_tensor *g = tf_eager_value(got), *w = tf_eager_value(want);
        assert_int_equal(tf_tensor_dtype(g), tf_tensor_dtype(w));
        assert_int_equal(tf_tensor_rank(g), tf_tensor_rank(w));
        size_t m = tf_tensor_numel(w);
        double gv[64], wv[64];
        assert_true(m <= 64);
        TF_ASSERT_OK(tf_tensor_copy_to_host(g, TF_F64, gv, m));
        TF_ASSERT_OK(tf_tensor_copy_to_host(w, TF_F64, wv, m));
        for (size_t k = 0; k < m; k++)
            if (gv[k] != wv[k])
                fail_msg("case %d element %zu: %.17g, the session op gives %.17g", codes[i], k,
                         gv[k], wv[k]);
        tf_eager_release(got);
        tf_eager_release(want);
    }
    tf_eager_release(x);
    tf_eager_release(y);
    tf_tensor_release(hx);
    tf_tensor_release(hy);
    tft_env_end(&e);
}

static tf_status gc_apply(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    (void)n;
    ensure(s);
    return apply(s, xs[0], xs[1], *(const int *)user, out);
}

static void test_every_entry_differentiates(void **state)
{
    (void)state;
    int codes[128], n = all_codes(codes);
    for (int i = 0; i < n; i++) {
        if (codes[i] == FX12_UNARY + TF_UNARY_SIGN)
            continue; /* no derivative to check (and none across its jump) */
        unsigned seed = 11u + (unsigned)i;
        tf_tensor *in[2] = {input(&seed), input(&seed)};
        char what[64];
        snprintf(what, sizeof what, "ABI 1.2 entry, case %d", codes[i]);
        /* Through f32 (convert, cast) the differences see f32 rounding: a wider step. */
        int f32 = codes[i] == FX12_CONVERT || codes[i] == FX12_CAST;
        gc_options o = {.tol = f32 ? 1e-3 : 1e-6, .step = f32 ? 1e-2 : 0, .seed = (unsigned)i + 1};
        gc_check(what, g_cpu, gc_apply, &codes[i], in, 2, &o);
        gc_order2 inner = {gc_apply, &codes[i]};
        snprintf(what, sizeof what, "ABI 1.2 entry, case %d, second order", codes[i]);
        o.tol = f32 ? 1e-3 : 1e-5;
        gc_check(what, g_cpu, gc_second_order, &inner, in, 2, &o);
        tf_tensor_release(in[0]);
        tf_tensor_release(in[1]);
    }
}

static void test_code_of_no_session_op(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    ensure(e.s);
    const int64_t shape[1] = {2};
    const double v[2] = {1.5, 2.5};
    tf_eager *x = ext_tensor(e.rt, 1, shape, v, 1), *out;
    TFT_EXPECT_FAIL(apply(e.s, x, x, FX12_UNARY + TF_UNARY_FLOOR, &out), TF_ERR_VALIDATION, "op",
                    out);
    TFT_EXPECT_FAIL(apply(e.s, x, x, FX12_BINARY + TF_BINARY_AND, &out), TF_ERR_VALIDATION, "op",
                    out);
    TFT_EXPECT_FAIL(apply(e.s, x, x, FX12_REDUCE + 7, &out), TF_ERR_VALIDATION, "op", out);
    expect_no_grad(x);
    tf_eager_release(x);
    tft_env_end(&e);
}

static tf_status gc_lae(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    (void)n, (void)user;
    ensure(s);
    tf_call_arg a[2] = {TF_ARG_TENSOR(xs[0]), TF_ARG_TENSOR(xs[1])};
    return tf_session_call(s, FX12_ID ".logaddexp", a, 2, out, 1);
}

static void test_kernel_op_rules_use_the_new_entries(void **state)
{
    (void)state;
    unsigned seed = 3;
    tf_tensor *in[2] = {input(&seed), input(&seed)};
    gc_options o = {.tol = 1e-6};
    gc_check("logaddexp", g_cpu, gc_lae, NULL, in, 2, &o);
    gc_order2 inner = {gc_lae, NULL};
    o.tol = 1e-5;
    gc_check("logaddexp, second order", g_cpu, gc_second_order, &inner, in, 2, &o);
    tf_tensor_release(in[0]);
    tf_tensor_release(in[1]);
}

/* ---- tensor lists and strings ---- */

static tf_status scaled_sum(tf_session *s, double scale, tf_eager *const *xs, int64_t n,
                            tf_eager **out)
{
    tf_call_arg a[2] = {TF_ARG_F64(scale), TF_ARG_TENSORS(xs, n)};
    return tf_session_call(s, FX12_ID ".scaled_sum", a, 2, out, 1);
}

static tf_status gc_sum3(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    (void)user;
    ensure(s);
    return scaled_sum(s, 0.5, xs, (int64_t)n, out);
}

static void test_tensor_list(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    ensure(e.s);
    const int64_t shape[1] = {2};
    const double a[2] = {1, 2}, b[2] = {10, 20}, c[2] = {100, 200};
    tf_eager *xs[3] = {ext_tensor(e.rt, 1, shape, a, 1), ext_tensor(e.rt, 1, shape, b, 0),
                       ext_tensor(e.rt, 1, shape, c, 0)};
    tf_eager *out;
    TF_ASSERT_OK(scaled_sum(e.s, 2.0, xs, 3, &out));
    const double want[2] = {222, 444};
    tft_expect_shaped(out, 1, shape, want, 2);
    tf_eager_release(out);
    /* the module's own refusal names the argument and says why */
    TFT_EXPECT_FAIL(scaled_sum(e.s, 2.0, xs, 0, &out), TF_ERR_VALIDATION, "xs", out);
    assert_non_null(strstr(tf_error_message(), "xs is empty"));
    /* the host's checks of a list */
    tf_eager *with_null[2] = {xs[0], NULL};
    TFT_EXPECT_FAIL(scaled_sum(e.s, 2.0, with_null, 2, &out), TF_ERR_VALIDATION, "xs", out);
    assert_non_null(strstr(tf_error_message(), "tensor 1 of the list is NULL"));
    TFT_EXPECT_FAIL(scaled_sum(e.s, 2.0, xs, -1, &out), TF_ERR_VALIDATION, "xs", out);
    TFT_EXPECT_FAIL(scaled_sum(e.s, 2.0, NULL, 2, &out), TF_ERR_VALIDATION, "xs", out);
    tf_call_arg wrong[2] = {TF_ARG_F64(1.0), TF_ARG_TENSOR(xs[0])};
    TFT_EXPECT_FAIL(tf_session_call(e.s, FX12_ID ".scaled_sum", wrong, 2, &out, 1),
                    TF_ERR_VALIDATION, "xs", out);
    /* a tensor of another runtime in the list */
    tft_env other = tft_env_begin();
    tf_eager *alien = ext_tensor(other.rt, 1, shape, a, 0), *mixed[2] = {xs[0], alien};
    TFT_EXPECT_FAIL(scaled_sum(e.s, 2.0, mixed, 2, &out), TF_ERR_CONTEXT_MISMATCH, NULL, out);
    expect_no_grad(xs[0]);
    tf_eager_release(alien);
    tft_env_end(&other);
    for (int i = 0; i < 3; i++)
        tf_eager_release(xs[i]);
    tft_env_end(&e);
    /* gradients flow to every tensor of the list */
    unsigned seed = 5;
    tf_tensor *in[3] = {input(&seed), input(&seed), input(&seed)};
    gc_options o = {.tol = 1e-6};
    gc_check("scaled_sum", g_cpu, gc_sum3, NULL, in, 3, &o);
    for (int i = 0; i < 3; i++)
        tf_tensor_release(in[i]);
}

static tf_status memo(tf_session *s, tf_eager *x, const char *key, tf_eager **out)
{
    tf_call_arg a[2] = {TF_ARG_TENSOR(x), TF_ARG_STRING(key)};
    return tf_session_call(s, FX12_ID ".memo", a, 2, out, 1);
}

static void test_string_argument_and_module_cache(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    ensure(e.s);
    const int64_t shape[1] = {2};
    const double v[2] = {1, 2}, want[2] = {5, 10};
    tf_eager *x = ext_tensor(e.rt, 1, shape, v, 0), *out;
    tf_cache_stats before, after;
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(e.rt, FX12_ID, &before));
    TF_ASSERT_OK(memo(e.s, x, "hello", &out));
    tft_expect_shaped(out, 1, shape, want, 2);
    tf_eager_release(out);
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(e.rt, FX12_ID, &after));
    assert_int_equal(after.misses, before.misses + 1);
    assert_int_equal(after.entries, before.entries + 1);
    assert_true(after.retained_bytes > before.retained_bytes);
    TF_ASSERT_OK(memo(e.s, x, "hello", &out)); /* the factor comes from the cache */
    tft_expect_shaped(out, 1, shape, want, 2);
    tf_eager_release(out);
    tf_cache_stats hit;
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(e.rt, FX12_ID, &hit));
    assert_int_equal(hit.hits, after.hits + 1);
    assert_int_equal(hit.entries, after.entries);
    tf_runtime_stats all;
    TF_ASSERT_OK(tf_runtime_cache_stats(e.rt, &all));
    assert_true(all.extensions.entries >= 1 && all.extensions.hits >= 1);
    TF_ASSERT_OK(tf_runtime_clear_caches(e.rt));
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(e.rt, FX12_ID, &after));
    assert_int_equal(after.entries, 0);
    TF_ASSERT_OK(memo(e.s, x, "hello", &out)); /* a miss again, and the same value */
    tft_expect_shaped(out, 1, shape, want, 2);
    tf_eager_release(out);
    TFT_EXPECT_FAIL(memo(e.s, x, NULL, &out), TF_ERR_VALIDATION, "key", out);
    char *huge = malloc(TF_EXT_MAX_STRING + 2);
    memset(huge, 'a', TF_EXT_MAX_STRING + 1);
    huge[TF_EXT_MAX_STRING + 1] = '\0';
    TFT_EXPECT_FAIL(memo(e.s, x, huge, &out), TF_ERR_VALIDATION, "key", out);
    free(huge);
    tf_call_arg bad[2] = {TF_ARG_TENSOR(x), TF_ARG_I64(3)};
    TFT_EXPECT_FAIL(tf_session_call(e.s, FX12_ID ".memo", bad, 2, &out, 1), TF_ERR_VALIDATION,
                    "key", out);
    tf_eager_release(x);
    tft_env_end(&e);
}

/* ---- composites that break their contract ---- */

static tf_status misbehave(tf_session *s, tf_eager *x, int64_t mode, tf_eager **out)
{
    tf_call_arg a[2] = {TF_ARG_TENSOR(x), TF_ARG_I64(mode)};
    return tf_session_call(s, FX12_ID ".misbehave", a, 2, out, 1);
}

static void test_composite_failures(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    ensure(e.s);
    const int64_t shape[1] = {2};
    const double v[2] = {1, 2};
    tf_eager *x = ext_tensor(e.rt, 1, shape, v, 1), *out;
    TFT_EXPECT_FAIL(misbehave(e.s, x, 0, &out), TF_ERR_RUNTIME_STATE, NULL, out);
    assert_non_null(strstr(tf_error_message(), "output 0 not set"));
    /* an ops-table failure comes out as that op reported it */
    TFT_EXPECT_FAIL(misbehave(e.s, x, 1, &out), TF_ERR_SHAPE_MISMATCH, NULL, out);
    assert_string_equal(tf_error_op(), "add");
    /* an output set before the failure is released (ASan and valgrind see a leak otherwise) */
    TFT_EXPECT_FAIL(misbehave(e.s, x, 2, &out), TF_ERR_BACKEND, NULL, out);
    TFT_EXPECT_FAIL(misbehave(e.s, x, 3, &out), TF_ERR_UNSUPPORTED, NULL, out);
    assert_non_null(strstr(tf_error_message(), FX12_ID ".misbehave: misbehave: mode 3 refuses"));
    assert_string_equal(tf_error_op(), FX12_ID ".misbehave");
    expect_no_grad(x);
    tf_eager_release(x);
    tft_env_end(&e);
}

static void test_call_args_and_call_reach_composites(void **state)
{
    (void)state;
    tft_env e = tft_env_begin();
    ensure(e.s);
    const int64_t shape[1] = {2};
    const double v[2] = {1, 2}, want[2] = {4, 8};
    tf_eager *x = ext_tensor(e.rt, 1, shape, v, 1), *out;
    tf_call_arg a[1] = {TF_ARG_TENSOR(x)};
    TF_ASSERT_OK(tf_session_call(e.s, FX12_ID ".via_call", a, 1, &out, 1));
    tft_expect_shaped(out, 1, shape, want, 2); /* x + 3 x */
    tf_eager *loss, *g;
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, out, NULL, 0, &loss));
    g = tft_grad(e.rt, loss, x);
    const double four[2] = {4, 4};
    tft_expect_shaped(g, 1, shape, four, 2);
    tf_eager_release(g);
    tf_eager_release(loss);
    tf_eager_release(out);
    tf_eager_release(x);
    tft_env_end(&e);
}

/* ---- interfaces and install refusals ---- */

typedef struct fx12_interface {
    uint32_t struct_size;
    int (*answer)(void);
} fx12_interface;

static void test_interface(void **state)
{
    (void)state;
    const fx12_interface *i = tf_extension_interface(g_fx, FX12_ID ".v1");
    assert_non_null(i);
    assert_true(i->struct_size >= sizeof *i);
    assert_int_equal(i->answer(), 42);
    assert_null(tf_extension_interface(g_fx, FX12_ID ".v2"));
    assert_null(tf_extension_interface(g_fx, NULL));
    assert_null(tf_extension_interface(NULL, FX12_ID ".v1"));
    tf_extension_module *old;
    TF_ASSERT_OK(tf_extension_load(FX_PATH("abi12_old_minor"), &old));
    assert_null(tf_extension_interface(old, FX12_ID ".v1")); /* a 1.1 module has none */
}

static void expect_install_refused(const char *fixture, const char *why)
{
    tf_extension_module *m;
    TF_ASSERT_OK(tf_extension_load(fixture, &m));
    tft_env e = tft_env_begin();
    tf_epoch before = tf_runtime_epoch(e.rt), epoch = 12345;
    tf_status st = tf_runtime_install_extension_module(e.rt, m, &epoch);
    assert_int_equal(st, TF_ERR_RUNTIME_STATE); /* a malformed op: an invalid transaction */
    assert_int_equal(epoch, 12345);
    assert_int_equal(tf_runtime_epoch(e.rt), before);
    const char *all[2] = {tf_error_message(), tf_error_cause()};
    if (!strstr(all[0], why) && !strstr(all[1], why))
        fail_msg("%s: expected '%s' in '%s' / '%s'", fixture, why, all[0], all[1]);
    assert_false(tf_runtime_has_op(e.rt, FX12_ID ".apply"));
    tft_env_end(&e);
}

static void test_install_refusals(void **state)
{
    (void)state;
    expect_install_refused(FX_PATH("abi12_string_kernel"), "only in composite ops");
    expect_install_refused(FX_PATH("abi12_list_first"), "only as the last argument");
    /* a module stating 1.1 has no composites: its ops lack infer and kernels */
    expect_install_refused(FX_PATH("abi12_old_minor"), "an infer function");
}

/* ---- a module built for ABI 1.1 keeps working on this host ---- */

static tf_status twice_infer(const tf_ext_rule_ctx *c, const tf_ext_meta *t, uint32_t nt,
                             const tf_ext_scalar *sc, uint32_t ns, tf_ext_meta *out)
{
    (void)c, (void)nt, (void)sc, (void)ns;
    out[0] = t[0];
    return t[0].dtype == TF_F64 ? TF_OK : TF_ERR_DTYPE_MISMATCH;
}

static tf_status twice_cpu(const tf_ext_kernel_ctx *k, const tf_operand *x, const tf_operand *y)
{
    (void)k;
    int64_t n = 1, idx[TF_MAX_RANK] = {0};
    for (uint32_t i = 0; i < x->rank; i++)
        n *= x->shape[i];
    for (int64_t e = 0; e < n; e++) {
        int64_t at = x->offset;
        for (uint32_t i = 0; i < x->rank; i++)
            at += idx[i] * x->strides[i];
        ((double *)y->data)[y->offset + e] = 2 * ((const double *)x->data)[at];
        for (uint32_t i = 0; i < x->rank && ++idx[i] == x->shape[i]; i++)
            idx[i] = 0;
    }
    return TF_OK;
}

static tf_status twice_vjp(const tf_ext_rule_ctx *c, const tf_ext_call *call, tf_ext_tensor *g,
                           const int *need, tf_ext_tensor **cot)
{
    tf_ext_tensor *two = NULL;
    tf_status st = need[0] && g ? c->ops->scalar(c->session, g, 2.0, &two) : TF_OK;
    if (!st && two)
        st = c->ops->mul(c->session, g, two, &cot[0]);
    c->ops->release(two);
    (void)call;
    return st;
}

static const uint32_t k_twice_kinds[] = {TF_EXT_ARG_TENSOR};
static const char *const k_twice_names[] = {"x"};
static const tf_ext_kernel k_twice_kernels[] = {{"cpu", TF_EXT_KERNEL_FN(twice_cpu)}};
/* As a 1.1 module's compiler laid it out: the struct ends before `compose`. */
static const tf_ext_op k_twice = {(uint32_t)offsetof(tf_ext_op, compose),
                                  1,
                                  1,
                                  1,
                                  "twice",
                                  k_twice_kinds,
                                  k_twice_names,
                                  twice_infer,
                                  k_twice_kernels,
                                  twice_vjp,
                                  NULL,
                                  "2 x",
                                  NULL,
                                  0,
                                  0};

static tf_status twice_install(const tf_host_api *host, const tf_ext_registrar *reg)
{
    (void)host;
    return reg->add_op(reg->candidate, &k_twice);
}

static const tf_extension_module_desc k_old_desc = {TF_EXTENSION_MODULE_SIZE_1_1,
                                                    TF_EXTENSION_ABI_MAJOR,
                                                    1,
                                                    0,
                                                    "test.old_minor",
                                                    "1.1",
                                                    NULL,
                                                    twice_install,
                                                    NULL,
                                                    0,
                                                    0,
                                                    NULL};

static void test_module_of_minor_1_works(void **state)
{
    (void)state;
    tf_extension_module *m;
    TF_ASSERT_OK(tf_extension_from_descriptor(&k_old_desc, &m));
    assert_int_equal(tf_extension_abi_minor(m), 1);
    assert_null(tf_extension_interface(m, "anything"));
    tft_env e = tft_env_begin();
    tf_epoch epoch;
    TF_ASSERT_OK(tf_runtime_install_extension_module(e.rt, m, &epoch));
    const int64_t shape[1] = {3};
    const double v[3] = {1, 2, 3}, want[3] = {2, 4, 6}, ones2[3] = {2, 2, 2};
    tf_eager *x = ext_tensor(e.rt, 1, shape, v, 1), *y, *loss;
    tf_call_arg a[1] = {TF_ARG_TENSOR(x)};
    TF_ASSERT_OK(tf_session_call(e.s, "test.old_minor.twice", a, 1, &y, 1));
    tft_expect_shaped(y, 1, shape, want, 3);
    TF_ASSERT_OK(tf_session_reduce_sum(e.s, y, NULL, 0, &loss));
    tf_eager *g = tft_grad(e.rt, loss, x);
    tft_expect_shaped(g, 1, shape, ones2, 3);
    tf_eager_release(g);
    tf_eager_release(loss);
    tf_eager_release(y);
    tf_eager_release(x);
    tft_env_end(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_entry_matches_its_session_op),
        cmocka_unit_test(test_every_entry_differentiates),
        cmocka_unit_test(test_code_of_no_session_op),
        cmocka_unit_test(test_kernel_op_rules_use_the_new_entries),
        cmocka_unit_test(test_tensor_list),
        cmocka_unit_test(test_string_argument_and_module_cache),
        cmocka_unit_test(test_composite_failures),
        cmocka_unit_test(test_call_args_and_call_reach_composites),
        cmocka_unit_test(test_interface),
        cmocka_unit_test(test_install_refusals),
        cmocka_unit_test(test_module_of_minor_1_works),
    };
    return cmocka_run_group_tests(tests, setup, tft_cpu_teardown);
}
