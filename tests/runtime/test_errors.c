/*
 * test_errors.c - every user-reachable error of the eager runtime and of
 * the ops that exist so far: the status, the argument the error names, the
 * out-parameter left unwritten, and the state left as it was (the grad
 * slot still holds the very tensor it held; a retry with the input fixed
 * succeeds).
 */
#include <math.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"

/* Never dereferenced: marks an out-parameter that must stay unwritten. */
#define UNWRITTEN ((tf_eager *)(uintptr_t)0x5a5a5a5a)

/* Asserts `call` fails with `status` naming argument `arg` (NULL: not
   checked) and leaves *out (a tf_eager * variable) unwritten. */
#define EXPECT_ERROR(out, call, status, arg)                               \
    do {                                                                   \
        (out) = UNWRITTEN;                                                 \
        TF_ASSERT_STATUS(call, status);                                    \
        if ((arg) != NULL)                                                 \
            assert_string_equal(tf_error_argument(), (const char *)(arg)); \
        assert_ptr_equal((out), UNWRITTEN);                                \
    } while (0)

/* ===================================================================== */
/* Fixture: two runtimes and a variable with a gradient already in its    */
/* slot                                                                   */
/* ===================================================================== */

typedef struct fx {
    tf_runtime *rt, *rt2;
    tf_session *s, *s2;
    tf_eager *x;   /* variable [3] = {1, 2, 3} of rt */
    tf_eager *y;   /* x * x, non-scalar */
    tf_eager *l;   /* sum(y) */
    tf_eager *x2;  /* variable [3] of rt2 */
    tf_eager *l2;  /* sum(x2 * x2) of rt2 */
    tf_tensor *g0; /* x's slot after one backward: {2, 4, 6} */
} fx;

static const int64_t k3[] = {3};

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f || tf_runtime_create(&f->rt) || tf_runtime_create(&f->rt2) ||
        tf_session_begin(f->rt, g_cpu, &f->s) || tf_session_begin(f->rt2, g_cpu, &f->s2))
        return -1;
    f->x = tft_f64(f->rt, 1, 1, k3, (double[]){1, 2, 3}, 3);
    f->x2 = tft_f64(f->rt2, 1, 1, k3, (double[]){4, 5, 6}, 3);
    tf_eager *y2 = NULL;
    if (tf_session_mul(f->s, f->x, f->x, &f->y) ||
        tf_session_reduce_sum(f->s, f->y, NULL, 0, &f->l) ||
        tf_session_mul(f->s2, f->x2, f->x2, &y2) ||
        tf_session_reduce_sum(f->s2, y2, NULL, 0, &f->l2) || tf_eager_backward(f->l, g_cpu) ||
        tf_eager_grad(f->x, &f->g0) || !f->g0)
        return -1;
    tf_eager_release(y2);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    tf_tensor_release(f->g0);
    tf_eager_release(f->l2);
    tf_eager_release(f->x2);
    tf_eager_release(f->l);
    tf_eager_release(f->y);
    tf_eager_release(f->x);
    tf_session_end(f->s);
    tf_session_end(f->s2);
    tf_runtime_release(f->rt);
    tf_runtime_release(f->rt2);
    free(f);
    return 0;
}

/* The slot of x still holds the very tensor of the first backward, and x2's
   slot (never backpropagated) is still empty. */
static void expect_state_unchanged(fx *f)
{
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(f->x, &g));
    assert_ptr_equal(g, f->g0);
    tft_expect_values(g, (double[]){2, 4, 6}, 3);
    tf_tensor_release(g);
    g = (tf_tensor *)0x1;
    TF_ASSERT_OK(tf_eager_grad(f->x2, &g));
    assert_null(g);
}

/* ===================================================================== */
/* Autodiff errors                                                        */
/* ===================================================================== */

static void test_non_scalar_grad(void **state)
{
    fx *f = *state;
    tf_eager *out;
    TF_ASSERT_STATUS(tf_eager_backward(f->y, g_cpu), TF_ERR_NON_SCALAR_GRAD);
    assert_string_equal(tf_error_argument(), "tensor");
    EXPECT_ERROR(out, tf_runtime_grad(f->rt, g_cpu, f->y, f->x, &out), TF_ERR_NON_SCALAR_GRAD,
                 "output");
    EXPECT_ERROR(out, tf_runtime_grad_optional(f->rt, g_cpu, f->y, f->x, &out),
                 TF_ERR_NON_SCALAR_GRAD, "output");
    expect_state_unchanged(f);
    /* retry with a scalar output: the functional form works, the slot is untouched */
    tf_eager *g = NULL;
    TF_ASSERT_OK(tf_runtime_grad(f->rt, g_cpu, f->l, f->x, &g));
    tft_expect_values(tf_eager_value(g), (double[]){2, 4, 6}, 3);
    tf_eager_release(g);
    expect_state_unchanged(f);
    /* a one-element non-rank-0 output is a scalar for backward */
    const int64_t s11[] = {1, 1};
    tf_eager *r = NULL;
    TF_ASSERT_OK(tf_session_reshape(f->s, f->l, 2, s11, &r));
    TF_ASSERT_OK(tf_runtime_grad(f->rt, g_cpu, r, f->x, &g));
    tft_expect_values(tf_eager_value(g), (double[]){2, 4, 6}, 3);
    tf_eager_release(g);
    TF_ASSERT_OK(tf_eager_backward(r, g_cpu)); /* accumulates onto the old gradient */
    tf_tensor *slot = NULL;
    TF_ASSERT_OK(tf_eager_grad(f->x, &slot));
    tft_expect_values(slot, (double[]){4, 8, 12}, 3);
    tf_tensor_release(slot);
    tf_eager_release(r);
}

static void expect_detach_hint(void)
{
    assert_non_null(strstr(tf_error_message(), "tf_eager_detach_into"));
}

static void test_context_mismatch_ops(void **state)
{
    fx *f = *state;
    tf_eager *out;
    EXPECT_ERROR(out, tf_session_add(f->s, f->x, f->x2, &out), TF_ERR_CONTEXT_MISMATCH, "y");
    expect_detach_hint();
    EXPECT_ERROR(out, tf_session_mul(f->s, f->x2, f->x, &out), TF_ERR_CONTEXT_MISMATCH, "x");
    EXPECT_ERROR(out, tf_session_neg(f->s, f->x2, &out), TF_ERR_CONTEXT_MISMATCH, "x");
    expect_detach_hint();
    EXPECT_ERROR(out, tf_session_reduce_sum(f->s, f->x2, NULL, 0, &out), TF_ERR_CONTEXT_MISMATCH,
                 "x");
    EXPECT_ERROR(out, tf_session_clamp(f->s, f->x, f->x, f->x2, &out), TF_ERR_CONTEXT_MISMATCH,
                 "hi");
    tf_eager *p = NULL;
    TF_ASSERT_OK(tf_session_full(f->s2, TF_BOOL, 1, k3, 1, &p));
    EXPECT_ERROR(out, tf_session_select(f->s, p, f->x, f->x, &out), TF_ERR_CONTEXT_MISMATCH,
                 "pred");
    static const int perm[] = {0};
    EXPECT_ERROR(out, tf_session_transpose(f->s, f->x2, perm, &out), TF_ERR_CONTEXT_MISMATCH, "x");
    EXPECT_ERROR(out, tf_session_convert(f->s, f->x2, TF_F32, &out), TF_ERR_CONTEXT_MISMATCH, "x");
    expect_state_unchanged(f);
    /* the fix the message names: move the value over first */
    tf_eager *m = NULL;
    TF_ASSERT_OK(tf_eager_detach_into(f->x2, f->rt, &m));
    TF_ASSERT_OK(tf_session_add(f->s, f->x, m, &out));
    tft_expect_values(tf_eager_value(out), (double[]){5, 7, 9}, 3);
    tf_eager_release(out);
    tf_eager_release(m);
    tf_eager_release(p);
}

static void test_context_mismatch_autodiff(void **state)
{
    fx *f = *state;
    tf_eager *out;
    /* output, wrt, cotangent, tangent and seed from the wrong runtime */
    EXPECT_ERROR(out, tf_runtime_grad(f->rt, g_cpu, f->l2, f->x, &out), TF_ERR_CONTEXT_MISMATCH,
                 "output");
    expect_detach_hint();
    EXPECT_ERROR(out, tf_runtime_grad(f->rt, g_cpu, f->l, f->x2, &out), TF_ERR_CONTEXT_MISMATCH,
                 "wrt");
    expect_detach_hint();
    EXPECT_ERROR(out, tf_runtime_grad_optional(f->rt2, g_cpu, f->l, f->x, &out),
                 TF_ERR_CONTEXT_MISMATCH, "output");
    tf_eager *cot2 = tft_f64(f->rt2, 0, 1, k3, (double[]){1, 1, 1}, 3);
    EXPECT_ERROR(out, tf_runtime_vjp(f->rt, g_cpu, f->y, f->x, cot2, &out), TF_ERR_CONTEXT_MISMATCH,
                 "cotangent");
    expect_detach_hint();
    EXPECT_ERROR(out, tf_runtime_vjp_optional(f->rt, g_cpu, f->y, f->x, cot2, &out),
                 TF_ERR_CONTEXT_MISMATCH, "cotangent");
    EXPECT_ERROR(out, tf_runtime_jvp(f->rt, g_cpu, f->y, f->x, cot2, &out), TF_ERR_CONTEXT_MISMATCH,
                 "tangent");
    expect_detach_hint();
    EXPECT_ERROR(out, tf_runtime_jvp_optional(f->rt, g_cpu, f->y, f->x, cot2, &out),
                 TF_ERR_CONTEXT_MISMATCH, "tangent");
    TF_ASSERT_STATUS(tf_eager_backward_with_seed(f->y, cot2, g_cpu), TF_ERR_CONTEXT_MISMATCH);
    assert_string_equal(tf_error_argument(), "seed");
    expect_detach_hint();
    expect_state_unchanged(f);
    /* retry with a cotangent of the right runtime */
    tf_eager *cot = NULL;
    TF_ASSERT_OK(tf_eager_detach_into(cot2, f->rt, &cot));
    TF_ASSERT_OK(tf_runtime_vjp(f->rt, g_cpu, f->y, f->x, cot, &out));
    tft_expect_values(tf_eager_value(out), (double[]){2, 4, 6}, 3);
    tf_eager_release(out);
    tf_eager_release(cot);
    tf_eager_release(cot2);
}

static void test_inactive_wrt(void **state)
{
    fx *f = *state;
    tf_eager *z = tft_f64(f->rt, 1, 1, k3, (double[]){0, 0, 0}, 3); /* unrelated variable */
    tf_eager *c = tft_f64(f->rt, 0, 1, k3, (double[]){1, 1, 1}, 3); /* unrelated constant */
    tf_eager *out;
    EXPECT_ERROR(out, tf_runtime_grad(f->rt, g_cpu, f->l, z, &out), TF_ERR_VALIDATION, "wrt");
    EXPECT_ERROR(out, tf_runtime_grad(f->rt, g_cpu, f->l, c, &out), TF_ERR_VALIDATION, "wrt");
    EXPECT_ERROR(out, tf_runtime_vjp(f->rt, g_cpu, f->y, z, c, &out), TF_ERR_VALIDATION, "wrt");
    EXPECT_ERROR(out, tf_runtime_jvp(f->rt, g_cpu, f->y, z, c, &out), TF_ERR_VALIDATION, "wrt");
    /* the _optional forms say "inactive" with NULL */
    out = UNWRITTEN;
    TF_ASSERT_OK(tf_runtime_grad_optional(f->rt, g_cpu, f->l, z, &out));
    assert_null(out);
    out = UNWRITTEN;
    TF_ASSERT_OK(tf_runtime_vjp_optional(f->rt, g_cpu, f->y, z, c, &out));
    assert_null(out);
    out = UNWRITTEN;
    TF_ASSERT_OK(tf_runtime_jvp_optional(f->rt, g_cpu, f->y, z, c, &out));
    assert_null(out);
    /* a constant output depends on no variable; with respect to itself it
       is the identity (wrt == output is always active) */
    tf_eager *k = tft_f64(f->rt, 0, 0, NULL, (double[]){1}, 1);
    EXPECT_ERROR(out, tf_runtime_grad(f->rt, g_cpu, k, f->x, &out), TF_ERR_VALIDATION, "wrt");
    TF_ASSERT_OK(tf_runtime_grad(f->rt, g_cpu, k, k, &out));
    tft_expect_values(tf_eager_value(out), (double[]){1}, 1);
    tf_eager_release(out);
    expect_state_unchanged(f);
    /* backward of the scalar constant: nothing to accumulate, no error */
    TF_ASSERT_OK(tf_eager_backward(k, g_cpu));
    expect_state_unchanged(f);
    tf_eager_release(k);
    tf_eager_release(z);
    tf_eager_release(c);
}

static void test_seed_mismatch(void **state)
{
    fx *f = *state;
    float sf[] = {1, 1, 1};
    tf_eager *seed32 = tft_constant(f->rt, TF_F32, 1, k3, sf, 3);
    const int64_t k2[] = {2}, k31[] = {3, 1};
    tf_eager *seed2 = tft_f64(f->rt, 0, 1, k2, (double[]){1, 1}, 2);
    tf_eager *seed31 = tft_f64(f->rt, 0, 2, k31, (double[]){1, 1, 1}, 3);
    TF_ASSERT_STATUS(tf_eager_backward_with_seed(f->y, seed32, g_cpu), TF_ERR_DTYPE_MISMATCH);
    assert_string_equal(tf_error_argument(), "seed");
    TF_ASSERT_STATUS(tf_eager_backward_with_seed(f->y, seed2, g_cpu), TF_ERR_SHAPE_MISMATCH);
    assert_string_equal(tf_error_argument(), "seed");
    TF_ASSERT_STATUS(tf_eager_backward_with_seed(f->y, seed31, g_cpu), TF_ERR_SHAPE_MISMATCH);
    assert_string_equal(tf_error_argument(), "seed");
    TF_ASSERT_STATUS(tf_eager_backward_with_seed(f->y, NULL, g_cpu), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "seed");
    TF_ASSERT_STATUS(tf_eager_backward_with_seed(f->y, seed2, NULL), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "engine");
    TF_ASSERT_STATUS(tf_eager_backward_with_seed(NULL, seed2, g_cpu), TF_ERR_VALIDATION);
    expect_state_unchanged(f);
    /* retry with the right seed: accumulates 2 x seed on top */
    tf_eager *seed = tft_f64(f->rt, 0, 1, k3, (double[]){1, 0, -1}, 3);
    TF_ASSERT_OK(tf_eager_backward_with_seed(f->y, seed, g_cpu));
    tf_tensor *g = NULL;
    TF_ASSERT_OK(tf_eager_grad(f->x, &g));
    tft_expect_values(g, (double[]){4, 4, 0}, 3);
    tf_tensor_release(g);
    /* put the fixture's slot back for the tests that follow */
    TF_ASSERT_OK(tf_eager_clear_grad(f->x));
    TF_ASSERT_OK(tf_eager_backward(f->l, g_cpu));
    tf_tensor_release(f->g0);
    TF_ASSERT_OK(tf_eager_grad(f->x, &f->g0));
    expect_state_unchanged(f);
    tf_eager_release(seed);
    tf_eager_release(seed32);
    tf_eager_release(seed2);
    tf_eager_release(seed31);
}

static void test_cotangent_tangent_mismatch(void **state)
{
    fx *f = *state;
    float vf[] = {1, 1, 1};
    const int64_t k2[] = {2}, k13[] = {1, 3};
    tf_eager *c32 = tft_constant(f->rt, TF_F32, 1, k3, vf, 3);
    tf_eager *c2 = tft_f64(f->rt, 0, 1, k2, (double[]){1, 1}, 2);
    tf_eager *c13 = tft_f64(f->rt, 0, 2, k13, (double[]){1, 1, 1}, 3);
    tf_eager *out;
    EXPECT_ERROR(out, tf_runtime_vjp(f->rt, g_cpu, f->y, f->x, c32, &out), TF_ERR_VALIDATION,
                 "cotangent");
    EXPECT_ERROR(out, tf_runtime_vjp(f->rt, g_cpu, f->y, f->x, c2, &out), TF_ERR_VALIDATION,
                 "cotangent");
    EXPECT_ERROR(out, tf_runtime_vjp(f->rt, g_cpu, f->y, f->x, c13, &out), TF_ERR_VALIDATION,
                 "cotangent");
    EXPECT_ERROR(out, tf_runtime_vjp(f->rt, g_cpu, f->y, f->x, NULL, &out), TF_ERR_VALIDATION,
                 "cotangent");
    EXPECT_ERROR(out, tf_runtime_vjp_optional(f->rt, g_cpu, f->y, f->x, c2, &out),
                 TF_ERR_VALIDATION, "cotangent");
    EXPECT_ERROR(out, tf_runtime_jvp(f->rt, g_cpu, f->y, f->x, c32, &out), TF_ERR_VALIDATION,
                 "tangent");
    EXPECT_ERROR(out, tf_runtime_jvp(f->rt, g_cpu, f->y, f->x, c2, &out), TF_ERR_VALIDATION,
                 "tangent");
    EXPECT_ERROR(out, tf_runtime_jvp(f->rt, g_cpu, f->y, f->x, c13, &out), TF_ERR_VALIDATION,
                 "tangent");
    EXPECT_ERROR(out, tf_runtime_jvp(f->rt, g_cpu, f->y, f->x, NULL, &out), TF_ERR_VALIDATION,
                 "tangent");
    EXPECT_ERROR(out, tf_runtime_jvp_optional(f->rt, g_cpu, f->l, f->x, c13, &out),
                 TF_ERR_VALIDATION, "tangent");
    /* the tangent has wrt's shape, not the output's */
    tf_eager *one = tft_f64(f->rt, 0, 0, NULL, (double[]){1}, 1);
    EXPECT_ERROR(out, tf_runtime_jvp(f->rt, g_cpu, f->l, f->x, one, &out), TF_ERR_VALIDATION,
                 "tangent");
    expect_state_unchanged(f);
    /* retries with the right shapes */
    tf_eager *t = tft_f64(f->rt, 0, 1, k3, (double[]){1, 1, 1}, 3);
    TF_ASSERT_OK(tf_runtime_jvp(f->rt, g_cpu, f->l, f->x, t, &out));
    tft_expect_values(tf_eager_value(out), (double[]){12}, 1);
    tf_eager_release(out);
    TF_ASSERT_OK(tf_runtime_vjp(f->rt, g_cpu, f->l, f->x, one, &out));
    tft_expect_values(tf_eager_value(out), (double[]){2, 4, 6}, 3);
    tf_eager_release(out);
    expect_state_unchanged(f);
    tf_eager_release(t);
    tf_eager_release(one);
    tf_eager_release(c32);
    tf_eager_release(c2);
    tf_eager_release(c13);
}

/* ===================================================================== */
/* Op argument errors                                                     */
/* ===================================================================== */

static void test_axis_errors(void **state)
{
    fx *f = *state;
    const int64_t s23[] = {2, 3};
    tf_eager *m = tft_f64(f->rt, 1, 2, s23, (double[]){1, 2, 3, 4, 5, 6}, 6), *out;
    tf_eager *sc = tft_f64(f->rt, 1, 0, NULL, (double[]){1}, 1);
    static const int a2[] = {2}, am3[] = {-3}, dup[] = {1, -1}, a0[] = {0};
    typedef tf_status (*red_fn)(tf_session *, tf_eager *, const int *, size_t, tf_eager **);
    red_fn reds[] = {tf_session_reduce_sum, tf_session_reduce_mean, tf_session_reduce_sum_squares};
    for (int i = 0; i < 3; i++) {
        EXPECT_ERROR(out, reds[i](f->s, m, a2, 1, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "axes");
        EXPECT_ERROR(out, reds[i](f->s, m, am3, 1, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "axes");
        EXPECT_ERROR(out, reds[i](f->s, m, dup, 2, &out), TF_ERR_VALIDATION, "axes");
        EXPECT_ERROR(out, reds[i](f->s, sc, a0, 1, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "axes");
    }
    static const int p05[] = {0, 5}, pm3[] = {-3, 0}, p00[] = {0, 0};
    EXPECT_ERROR(out, tf_session_transpose(f->s, m, p05, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "perm");
    EXPECT_ERROR(out, tf_session_transpose(f->s, m, pm3, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "perm");
    EXPECT_ERROR(out, tf_session_transpose(f->s, m, p00, &out), TF_ERR_VALIDATION, "perm");
    EXPECT_ERROR(out, tf_session_transpose(f->s, m, NULL, &out), TF_ERR_VALIDATION, "perm");
    static const int r3[] = {3};
    EXPECT_ERROR(out, tf_session_reverse(f->s, m, r3, 1, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "axes");
    EXPECT_ERROR(out, tf_session_reverse(f->s, m, am3, 1, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "axes");
    EXPECT_ERROR(out, tf_session_reverse(f->s, m, dup, 2, &out), TF_ERR_VALIDATION, "axes");
    EXPECT_ERROR(out, tf_session_reverse(f->s, sc, a0, 1, &out), TF_ERR_AXIS_OUT_OF_BOUNDS, "axes");
    /* broadcast_in_dim: a dim past the target rank */
    const int64_t s4[] = {4, 3};
    static const int d5[] = {5};
    tf_eager *v = tft_f64(f->rt, 1, 1, k3, (double[]){1, 2, 3}, 3);
    EXPECT_ERROR(out, tf_session_broadcast_in_dim(f->s, v, 2, s4, d5, &out),
                 TF_ERR_AXIS_OUT_OF_BOUNDS, NULL);
    /* nothing was recorded: the variables have no gradient from any of it */
    tf_tensor *g = (tf_tensor *)0x1;
    TF_ASSERT_OK(tf_eager_grad(m, &g));
    assert_null(g);
    expect_state_unchanged(f);
    /* retries */
    static const int a1[] = {1}, p10[] = {1, 0};
    TF_ASSERT_OK(tf_session_reduce_sum(f->s, m, a1, 1, &out));
    tft_expect_values(tf_eager_value(out), (double[]){9, 12}, 2);
    tf_eager_release(out);
    TF_ASSERT_OK(tf_session_transpose(f->s, m, p10, &out));
    tf_eager_release(out);
    tf_eager_release(v);
    tf_eager_release(sc);
    tf_eager_release(m);
}

static void test_shape_errors(void **state)
{
    fx *f = *state;
    const int64_t s23[] = {2, 3}, s32[] = {3, 2}, s2[] = {2}, s5[] = {5}, s24[] = {2, 4};
    tf_eager *a = tft_f64(f->rt, 1, 2, s23, (double[]){1, 2, 3, 4, 5, 6}, 6);
    tf_eager *b = tft_f64(f->rt, 0, 2, s32, (double[]){1, 2, 3, 4, 5, 6}, 6);
    tf_eager *v2 = tft_f64(f->rt, 0, 1, s2, (double[]){1, 2}, 2), *out;
    /* NumPy alignment: [2,3] and [2] do not broadcast (the 2 meets the 3) */
    EXPECT_ERROR(out, tf_session_add(f->s, a, v2, &out), TF_ERR_SHAPE_MISMATCH, NULL);
    EXPECT_ERROR(out, tf_session_mul(f->s, a, b, &out), TF_ERR_SHAPE_MISMATCH, NULL);
    EXPECT_ERROR(out, tf_session_maximum(f->s, v2, a, &out), TF_ERR_SHAPE_MISMATCH, NULL);
    EXPECT_ERROR(out, tf_session_compare(f->s, a, b, TF_COMPARE_LT, &out), TF_ERR_SHAPE_MISMATCH,
                 NULL);
    tf_eager *p = NULL;
    TF_ASSERT_OK(tf_session_full(f->s, TF_BOOL, 1, s2, 1, &p));
    EXPECT_ERROR(out, tf_session_select(f->s, p, a, a, &out), TF_ERR_SHAPE_MISMATCH, NULL);
    EXPECT_ERROR(out, tf_session_clamp(f->s, a, v2, a, &out), TF_ERR_SHAPE_MISMATCH, NULL);
    EXPECT_ERROR(out, tf_session_reshape(f->s, a, 1, s5, &out), TF_ERR_ELEMENT_COUNT, "shape");
    EXPECT_ERROR(out, tf_session_reshape(f->s, a, 1, NULL, &out), TF_ERR_VALIDATION, "shape");
    static const int d1[] = {1}, d01[] = {0, 1};
    tf_eager *v3 = tft_f64(f->rt, 0, 1, k3, (double[]){1, 2, 3}, 3);
    EXPECT_ERROR(out, tf_session_broadcast_in_dim(f->s, v3, 2, s24, d1, &out),
                 TF_ERR_SHAPE_MISMATCH, NULL);
    EXPECT_ERROR(out, tf_session_broadcast_in_dim(f->s, a, 2, s24, d01, &out),
                 TF_ERR_SHAPE_MISMATCH, NULL);
    EXPECT_ERROR(out, tf_session_broadcast_in_dim(f->s, a, 1, s2, d1, &out), TF_ERR_SHAPE_MISMATCH,
                 NULL);
    EXPECT_ERROR(out, tf_session_broadcast_in_dim(f->s, v3, 2, NULL, d1, &out), TF_ERR_VALIDATION,
                 "shape");
    tf_tensor *g = (tf_tensor *)0x1;
    TF_ASSERT_OK(tf_eager_grad(a, &g));
    assert_null(g);
    expect_state_unchanged(f);
    /* retry: [2,3] + [2,1] broadcasts */
    const int64_t s21[] = {2, 1};
    tf_eager *c = NULL;
    TF_ASSERT_OK(tf_session_reshape(f->s, v2, 2, s21, &c));
    TF_ASSERT_OK(tf_session_add(f->s, a, c, &out));
    tft_expect_values(tf_eager_value(out), (double[]){2, 4, 4, 6, 6, 8}, 6);
    tf_eager_release(out);
    tf_eager_release(c);
    tf_eager_release(v3);
    tf_eager_release(p);
    tf_eager_release(v2);
    tf_eager_release(b);
    tf_eager_release(a);
}

static void test_dtype_errors(void **state)
{
    fx *f = *state;
    float xf[] = {1, 2, 3};
    int32_t xi[] = {1, 2, 3};
    tf_eager *a32 = tft_constant(f->rt, TF_F32, 1, k3, xf, 3),
             *i32 = tft_constant(f->rt, TF_I32, 1, k3, xi, 3);
    tf_eager *out;
    EXPECT_ERROR(out, tf_session_add(f->s, f->x, a32, &out), TF_ERR_DTYPE_MISMATCH, "y");
    EXPECT_ERROR(out, tf_session_pow(f->s, a32, f->x, &out), TF_ERR_DTYPE_MISMATCH, "y");
    EXPECT_ERROR(out, tf_session_compare(f->s, f->x, i32, TF_COMPARE_EQ, &out),
                 TF_ERR_DTYPE_MISMATCH, "y");
    EXPECT_ERROR(out, tf_session_clamp(f->s, f->x, a32, f->x, &out), TF_ERR_DTYPE_MISMATCH, "lo");
    EXPECT_ERROR(out, tf_session_clamp(f->s, f->x, f->x, i32, &out), TF_ERR_DTYPE_MISMATCH, "hi");
    tf_eager *p = NULL;
    TF_ASSERT_OK(tf_session_full(f->s, TF_BOOL, 1, k3, 1, &p));
    EXPECT_ERROR(out, tf_session_select(f->s, p, f->x, a32, &out), TF_ERR_DTYPE_MISMATCH,
                 "on_false");
    EXPECT_ERROR(out, tf_session_select(f->s, f->x, f->x, f->x, &out), TF_ERR_DTYPE_MISMATCH,
                 "pred");
    /* float-only ops on integers */
    EXPECT_ERROR(out, tf_session_exp(f->s, i32, &out), TF_ERR_DTYPE_MISMATCH, NULL);
    EXPECT_ERROR(out, tf_session_sqrt(f->s, i32, &out), TF_ERR_DTYPE_MISMATCH, NULL);
    EXPECT_ERROR(out, tf_session_reduce_mean(f->s, i32, NULL, 0, &out), TF_ERR_DTYPE_MISMATCH, "x");
    /* bad enum values */
    EXPECT_ERROR(out, tf_session_compare(f->s, f->x, f->x, (tf_compare_op)99, &out),
                 TF_ERR_VALIDATION, "direction");
    EXPECT_ERROR(out, tf_session_convert(f->s, f->x, (tf_dtype)99, &out), TF_ERR_VALIDATION,
                 "dtype");
    EXPECT_ERROR(out, tf_session_cast(f->s, f->x, (tf_dtype)-1, &out), TF_ERR_VALIDATION, "dtype");
    /* a checked conversion that would change a value */
    tf_eager *h = tft_f64(f->rt, 0, 1, k3, (double[]){0.5, 1, 2}, 3);
    EXPECT_ERROR(out, tf_session_convert(f->s, h, TF_I32, &out), TF_ERR_OUT_OF_RANGE, NULL);
    expect_state_unchanged(f);
    /* retries */
    TF_ASSERT_OK(tf_session_convert(f->s, a32, TF_F64, &out));
    tf_eager *sum = NULL;
    TF_ASSERT_OK(tf_session_add(f->s, f->x, out, &sum));
    tft_expect_values(tf_eager_value(sum), (double[]){2, 4, 6}, 3);
    tf_eager_release(sum);
    tf_eager_release(out);
    tf_eager_release(h);
    tf_eager_release(p);
    tf_eager_release(a32);
    tf_eager_release(i32);
}

static void test_variable_from_non_float(void **state)
{
    fx *f = *state;
    int32_t i[] = {1, 2, 3};
    int64_t l[] = {1, 2, 3};
    uint8_t b[] = {1, 0, 1};
    tf_tensor *ti = NULL, *tl = NULL, *tb = NULL, *tf32 = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(TF_I32, 1, k3, i, 3, &ti));
    TF_ASSERT_OK(tf_tensor_from_host(TF_I64, 1, k3, l, 3, &tl));
    TF_ASSERT_OK(tf_tensor_from_host(TF_BOOL, 1, k3, b, 3, &tb));
    TF_ASSERT_OK(tf_tensor_from_host(TF_F32, 1, k3, (float[]){1, 2, 3}, 3, &tf32));
    tf_eager *out;
    EXPECT_ERROR(out, tf_runtime_variable_from(f->rt, ti, &out), TF_ERR_DTYPE_MISMATCH, "tensor");
    EXPECT_ERROR(out, tf_runtime_variable_from(f->rt, tl, &out), TF_ERR_DTYPE_MISMATCH, "tensor");
    EXPECT_ERROR(out, tf_eager_requires_grad(tb, f->rt, &out), TF_ERR_DTYPE_MISMATCH, "tensor");
    /* the same tensors are fine as constants; f32 is fine as a variable */
    TF_ASSERT_OK(tf_runtime_constant_from(f->rt, ti, &out));
    assert_false(tf_eager_tracks_grad(out));
    tf_eager_release(out);
    TF_ASSERT_OK(tf_runtime_variable_from(f->rt, tf32, &out));
    assert_true(tf_eager_tracks_grad(out));
    tf_eager_release(out);
    expect_state_unchanged(f);
    tf_tensor_release(ti);
    tf_tensor_release(tl);
    tf_tensor_release(tb);
    tf_tensor_release(tf32);
}

static void test_null_arguments(void **state)
{
    fx *f = *state;
    tf_eager *out;
    tf_tensor *t = tf_eager_value(f->x);
    /* ops */
    EXPECT_ERROR(out, tf_session_add(NULL, f->x, f->x, &out), TF_ERR_VALIDATION, "session");
    EXPECT_ERROR(out, tf_session_add(f->s, NULL, f->x, &out), TF_ERR_VALIDATION, "x");
    EXPECT_ERROR(out, tf_session_add(f->s, f->x, NULL, &out), TF_ERR_VALIDATION, "y");
    TF_ASSERT_STATUS(tf_session_add(f->s, f->x, f->x, NULL), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "out");
    EXPECT_ERROR(out, tf_session_exp(f->s, NULL, &out), TF_ERR_VALIDATION, "x");
    EXPECT_ERROR(out, tf_session_select(f->s, NULL, f->x, f->x, &out), TF_ERR_VALIDATION, "pred");
    EXPECT_ERROR(out, tf_session_clamp(f->s, f->x, NULL, f->x, &out), TF_ERR_VALIDATION, "lo");
    EXPECT_ERROR(out, tf_session_reduce_sum(f->s, NULL, NULL, 0, &out), TF_ERR_VALIDATION, "x");
    EXPECT_ERROR(out, tf_session_reshape(f->s, NULL, 0, NULL, &out), TF_ERR_VALIDATION, "x");
    EXPECT_ERROR(out, tf_session_full(NULL, TF_F64, 0, NULL, 0, &out), TF_ERR_VALIDATION,
                 "session");
    EXPECT_ERROR(out, tf_session_constant_from_host(f->s, NULL, &out), TF_ERR_VALIDATION, "tensor");
    /* autodiff */
    EXPECT_ERROR(out, tf_runtime_grad(NULL, g_cpu, f->l, f->x, &out), TF_ERR_VALIDATION, "runtime");
    EXPECT_ERROR(out, tf_runtime_grad(f->rt, NULL, f->l, f->x, &out), TF_ERR_VALIDATION, "engine");
    EXPECT_ERROR(out, tf_runtime_grad(f->rt, g_cpu, NULL, f->x, &out), TF_ERR_VALIDATION, "output");
    EXPECT_ERROR(out, tf_runtime_grad(f->rt, g_cpu, f->l, NULL, &out), TF_ERR_VALIDATION, "wrt");
    TF_ASSERT_STATUS(tf_runtime_grad(f->rt, g_cpu, f->l, f->x, NULL), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "out");
    EXPECT_ERROR(out, tf_runtime_vjp(f->rt, g_cpu, f->y, NULL, f->y, &out), TF_ERR_VALIDATION,
                 "wrt");
    EXPECT_ERROR(out, tf_runtime_jvp_optional(f->rt, g_cpu, NULL, f->x, f->x, &out),
                 TF_ERR_VALIDATION, "output");
    TF_ASSERT_STATUS(tf_eager_backward(NULL, g_cpu), TF_ERR_VALIDATION);
    TF_ASSERT_STATUS(tf_eager_backward(f->l, NULL), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "engine");
    /* eager tensors and runtimes */
    EXPECT_ERROR(out, tf_runtime_constant_from(f->rt, NULL, &out), TF_ERR_VALIDATION, "tensor");
    EXPECT_ERROR(out, tf_runtime_variable_from(NULL, t, &out), TF_ERR_VALIDATION, "runtime");
    EXPECT_ERROR(out, tf_eager_from_tensor(t, NULL, &out), TF_ERR_VALIDATION, "runtime");
    EXPECT_ERROR(out, tf_eager_detach(NULL, &out), TF_ERR_VALIDATION, "tensor");
    EXPECT_ERROR(out, tf_eager_detach_into(f->x, NULL, &out), TF_ERR_VALIDATION, "runtime");
    TF_ASSERT_STATUS(tf_eager_detach(f->x, NULL), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "out");
    TF_ASSERT_STATUS(tf_eager_grad(f->x, NULL), TF_ERR_VALIDATION);
    TF_ASSERT_STATUS(tf_eager_grad(NULL, &t), TF_ERR_VALIDATION);
    TF_ASSERT_STATUS(tf_eager_clear_grad(NULL), TF_ERR_VALIDATION);
    TF_ASSERT_STATUS(tf_runtime_clear_grads(NULL), TF_ERR_VALIDATION);
    TF_ASSERT_STATUS(tf_runtime_create(NULL), TF_ERR_VALIDATION);
    tf_runtime *rt = (tf_runtime *)0x1;
    TF_ASSERT_STATUS(tf_runtime_create_with_ad_context(NULL, &rt), TF_ERR_VALIDATION);
    assert_ptr_equal(rt, (tf_runtime *)0x1);
    tf_session *s = (tf_session *)0x1;
    TF_ASSERT_STATUS(tf_session_begin(f->rt, NULL, &s), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "engine");
    assert_ptr_equal(s, (tf_session *)0x1);
    TF_ASSERT_STATUS(tf_runtime_with_session(f->rt, g_cpu, NULL, NULL), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "fn");
    tf_scope sc;
    TF_ASSERT_STATUS(tf_scope_begin_no_grad(NULL, &sc), TF_ERR_VALIDATION);
    TF_ASSERT_STATUS(tf_scope_begin_capture_trace(f->rt, NULL), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "scope");
    TF_ASSERT_STATUS(tf_runtime_cache_stats(f->rt, NULL), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "out");
    TF_ASSERT_STATUS(tf_runtime_clear_caches(NULL), TF_ERR_VALIDATION);
    /* NULL is a no-op for the release functions and scope end */
    tf_eager_release(NULL);
    tf_runtime_release(NULL);
    tf_session_end(NULL);
    tf_scope_end(NULL);
    expect_state_unchanged(f);
    /* recording still works after all of that */
    TF_ASSERT_OK(tf_session_mul(f->s, f->x, f->x, &out));
    assert_true(tf_eager_tracks_grad(out));
    tf_eager_release(out);
}

static void test_cache_limit_errors(void **state)
{
    fx *f = *state;
    tf_cache_limits before_p, before_t, now;
    TF_ASSERT_OK(tf_runtime_prepared_derivative_cache_limits(f->rt, &before_p));
    TF_ASSERT_OK(tf_runtime_ad_transform_cache_limits(f->rt, &before_t));
    tf_cache_limits zero = {0, 0}, zero_bytes = {0, 1024};
    TF_ASSERT_STATUS(tf_runtime_set_prepared_derivative_cache_limits(f->rt, &zero),
                     TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "limits");
    TF_ASSERT_STATUS(tf_runtime_set_prepared_derivative_cache_limits(f->rt, &zero_bytes),
                     TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "limits");
    TF_ASSERT_STATUS(tf_runtime_set_ad_transform_cache_limits(f->rt, &zero), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "limits");
    TF_ASSERT_STATUS(tf_runtime_set_prepared_derivative_cache_limits(f->rt, NULL),
                     TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "limits");
    TF_ASSERT_STATUS(tf_runtime_set_ad_transform_cache_limits(NULL, &zero), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "runtime");
    TF_ASSERT_STATUS(tf_runtime_prepared_derivative_cache_limits(f->rt, NULL), TF_ERR_VALIDATION);
    assert_string_equal(tf_error_argument(), "out");
    TF_ASSERT_OK(tf_runtime_prepared_derivative_cache_limits(f->rt, &now));
    assert_memory_equal(&now, &before_p, sizeof now);
    TF_ASSERT_OK(tf_runtime_ad_transform_cache_limits(f->rt, &now));
    assert_memory_equal(&now, &before_t, sizeof now);
    /* retry with a valid limit, then put the old one back */
    tf_cache_limits one = {1, 0};
    TF_ASSERT_OK(tf_runtime_set_prepared_derivative_cache_limits(f->rt, &one));
    TF_ASSERT_OK(tf_runtime_prepared_derivative_cache_limits(f->rt, &now));
    assert_int_equal(now.max_entries, 1);
    TF_ASSERT_OK(tf_runtime_set_prepared_derivative_cache_limits(f->rt, &before_p));
    expect_state_unchanged(f);
}

/* ===================================================================== */
/* Handles that outlive what the caller released (issue 19, item 3)        */
/* ===================================================================== */

/* A scope holds its runtime: ending it after the caller's release is safe
   (the sanitizer build checks that nothing freed is read). */
static void test_scope_outlives_runtime(void **state)
{
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        tf_runtime *rt = NULL;
        TF_ASSERT_OK(tf_runtime_create(&rt));
        tf_scope sc;
        TF_ASSERT_OK(kind ? tf_scope_begin_capture_trace(rt, &sc) : tf_scope_begin_no_grad(rt, &sc));
        assert_int_equal(tf_runtime_ref_count(rt), 2);
        tf_runtime_release(rt); /* the scope's reference keeps it */
        assert_int_equal(tf_runtime_ref_count(sc.runtime), 1);
        tf_scope_end(&sc); /* frees it */
        assert_null(sc.runtime);
        tf_scope_end(&sc); /* a second end is a no-op */
    }
}

/* The 17th runtime with a scope open on this thread is refused; its scope
   and reference count are left as they were. */
static void test_scope_table_full(void **state)
{
    (void)state;
    tf_runtime *rts[17];
    tf_scope sc[17];
    for (int i = 0; i < 17; i++)
        TF_ASSERT_OK(tf_runtime_create(&rts[i]));
    for (int i = 0; i < 16; i++)
        TF_ASSERT_OK(tf_scope_begin_no_grad(rts[i], &sc[i]));
    memset(&sc[16], 0x5a, sizeof sc[16]);
    tf_scope before = sc[16];
    TF_ASSERT_STATUS(tf_scope_begin_capture_trace(rts[16], &sc[16]), TF_ERR_RUNTIME_STATE);
    assert_memory_equal(&sc[16], &before, sizeof before);
    assert_int_equal(tf_runtime_ref_count(rts[16]), 1);
    for (int i = 15; i >= 0; i--)
        tf_scope_end(&sc[i]);
    TF_ASSERT_OK(tf_scope_begin_capture_trace(rts[16], &sc[16])); /* room again */
    tf_scope_end(&sc[16]);
    for (int i = 0; i < 17; i++) {
        assert_int_equal(tf_runtime_ref_count(rts[i]), 1);
        tf_runtime_release(rts[i]);
    }
}

/* A session holds its engine and its runtime until it ends. */
static void test_session_outlives_engine(void **state)
{
    (void)state;
    tf_engine *e = NULL;
    tf_runtime *rt = NULL;
    tf_session *s = NULL;
    TF_ASSERT_OK(tf_engine_open("cpu", 1, &e));
    TF_ASSERT_OK(tf_runtime_create(&rt));
    TF_ASSERT_OK(tf_session_begin(rt, e, &s));
    tf_engine_destroy(e);
    tf_runtime_release(rt);
    tf_eager *x = NULL, *y = NULL;
    TF_ASSERT_OK(tf_session_full(s, TF_F64, 1, k3, 2.0, &x));
    TF_ASSERT_OK(tf_session_mul(s, x, x, &y)); /* deferred until the session ends */
    tf_eager_release(x);
    tf_session_end(s); /* runs the deferred work on the engine, then lets go of both */
    double v[3];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(y), TF_F64, v, 3));
    assert_true(v[0] == 4 && v[1] == 4 && v[2] == 4);
    tf_eager_release(y);
}

/* ===================================================================== */
/* One truth rule for bool (issue 19, item 12)                             */
/* ===================================================================== */

/* full(BOOL, v) and pad(bool, v) agree with cast(v -> bool): v != 0, NaN true. */
static void test_bool_fill_truth(void **state)
{
    fx *f = *state;
    static const double vals[] = {0.5, -0.25, 0.0, -0.0, 2.0, NAN, 1e300};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        tf_eager *full = NULL, *one = NULL, *cast = NULL, *padded = NULL;
        TF_ASSERT_OK(tf_session_full(f->s, TF_BOOL, 0, NULL, vals[i], &full));
        TF_ASSERT_OK(tf_session_scalar(f->s, TF_F64, vals[i], &one));
        TF_ASSERT_OK(tf_session_cast(f->s, one, TF_BOOL, &cast));
        const int64_t zero = 0, lo = 1;
        tf_eager *none = NULL;
        TF_ASSERT_OK(tf_session_full(f->s, TF_BOOL, 1, &zero, 0.0, &none));
        TF_ASSERT_OK(tf_session_pad(f->s, none, &lo, &zero, &zero, vals[i], &padded));
        uint8_t a = 7, b = 7, c = 7;
        TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(full), TF_BOOL, &a, 1));
        TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(cast), TF_BOOL, &b, 1));
        TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(padded), TF_BOOL, &c, 1));
        unsigned want = vals[i] != 0.0; /* NaN != 0 */
        if (a != want || b != want || c != want)
            fail_msg("value %g: full %u, cast %u, pad %u, want %u", vals[i], a, b, c, want);
        tf_eager *all[] = {full, one, cast, none, padded};
        for (size_t k = 0; k < 5; k++)
            tf_eager_release(all[k]);
    }
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_non_scalar_grad),
        T(test_context_mismatch_ops),
        T(test_context_mismatch_autodiff),
        T(test_inactive_wrt),
        T(test_seed_mismatch),
        T(test_cotangent_tangent_mismatch),
        T(test_axis_errors),
        T(test_shape_errors),
        T(test_dtype_errors),
        T(test_variable_from_non_float),
        T(test_null_arguments),
        T(test_cache_limit_errors),
        T(test_bool_fill_truth),
        cmocka_unit_test(test_scope_outlives_runtime),
        cmocka_unit_test(test_scope_table_full),
        cmocka_unit_test(test_session_outlives_engine),
    };
#undef T
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
