/*
 * grads.c - finite-difference checks of the eager ops' derivatives on the
 * engine under test.
 *
 * For each op the kit evaluates a small function of one to three inputs on
 * the engine and compares
 *   - its VJP (tf_runtime_vjp with a random cotangent w) with <w, J e_k>,
 *   - its JVP (tf_runtime_jvp with a random tangent v) with J v,
 * where J e_k comes from central differences of the same function on the
 * same engine. Everything runs in f64 when the engine claims f64
 * arithmetic (step 1e-6, tolerance 1e-6 of max(|reference|, 1)); otherwise
 * in f32 with step 1e-2 and tolerance 2e-2, because f32 differences lose
 * about half of the 24 bits to cancellation. An op the engine cannot run
 * (TF_ERR_UNSUPPORTED from the op or from its derivative) is reported as
 * unsupported, not as a failure.
 *
 * The ops defined for complex values run again in c128 (c64 where the
 * engine multiplies c64 but not c128, with f32's step and tolerance) for an
 * engine of ABI 1.4 or later that claims complex multiplication: each
 * complex element is two real coordinates (re, im), and the VJP in
 * PyTorch's convention is the adjoint under the real inner product
 * Re(sum(conj(a) b)) (docs/complex.md), so in those coordinates it is the
 * real VJP, and the same central differences along every real and every
 * imaginary part check both modes.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef tf_status (*g_fn)(tf_session *s, tf_eager *const *xs, tf_eager **out);

typedef struct g_check {
    const char *name;
    g_fn fn;
    int n;
    size_t rank[3];
    int64_t shape[3][3];
    double lo, hi;  /* each part's range for complex */
    int complex_ok; /* defined for complex values (and checked in c128 or c64 too) */
} g_check;

/* ---- the functions checked ---- */

#define UNARY(op)                                                               \
    static tf_status g_##op(tf_session *s, tf_eager *const *xs, tf_eager **out) \
    {                                                                           \
        return tf_session_##op(s, xs[0], out);                                  \
    }
UNARY(exp)
UNARY(log)
UNARY(sin)
UNARY(tanh)
UNARY(sqrt)
UNARY(sigmoid)
UNARY(erf)

#define BINARY(op)                                                              \
    static tf_status g_##op(tf_session *s, tf_eager *const *xs, tf_eager **out) \
    {                                                                           \
        return tf_session_##op(s, xs[0], xs[1], out);                           \
    }
BINARY(add)
BINARY(mul)
BINARY(div)
BINARY(pow)
BINARY(maximum)
BINARY(matmul)

static tf_status g_sum(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    int axis = 1;
    return tf_session_reduce_sum(s, xs[0], &axis, 1, out);
}

static tf_status g_prod(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    return tf_session_reduce_prod(s, xs[0], NULL, 0, out);
}

static tf_status g_max(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    int axis = 0;
    return tf_session_reduce_max(s, xs[0], &axis, 1, out);
}

static tf_status g_lse(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    return tf_session_logsumexp(s, xs[0], NULL, 0, out);
}

static tf_status g_dot(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    tf_dot_dims d = {.n_contracting = 1, .n_batch = 1};
    d.lhs_contracting[0] = 1;
    d.rhs_contracting[0] = 0;
    d.lhs_batch[0] = 2;
    d.rhs_batch[0] = 2;
    return tf_session_dot_general(s, xs[0], xs[1], &d, out);
}

static tf_status g_transpose(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    int perm[2] = {1, 0};
    return tf_session_transpose(s, xs[0], perm, out);
}

static tf_status g_reshape(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    int64_t shape[2] = {3, 2};
    return tf_session_reshape(s, xs[0], 2, shape, out);
}

static tf_status g_slice(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    int64_t start[2] = {0, 1}, limit[2] = {2, 3}, stride[2] = {1, 1};
    return tf_session_slice(s, xs[0], start, limit, stride, out);
}

static tf_status g_concat(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    return tf_session_concatenate(s, xs, 2, 0, out);
}

static tf_status g_pad(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    int64_t low[2] = {1, -1}, high[2] = {0, 1}, interior[2] = {1, 0};
    return tf_session_pad(s, xs[0], low, high, interior, 0.5, out);
}

static tf_status g_reverse(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    int axes[1] = {1};
    return tf_session_reverse(s, xs[0], axes, 1, out);
}

static tf_status g_broadcast(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    int64_t shape[3] = {2, 4, 3};
    int dims[2] = {0, 2};
    return tf_session_broadcast_in_dim(s, xs[0], 3, shape, dims, out);
}

static tf_status g_select(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    tf_eager *pred = NULL;
    tf_status st = tf_session_compare(s, xs[0], xs[1], TF_COMPARE_GT, &pred);
    if (!st)
        st = tf_session_select(s, pred, xs[0], xs[1], out);
    tf_eager_release(pred);
    return st;
}

/* An i32 constant of the session's engine. */
static tf_status index_const(tf_session *s, size_t rank, const int64_t *shape, const int32_t *v,
                             size_t n, tf_eager **out)
{
    tf_tensor *h = NULL;
    tf_status st = tf_tensor_from_host(TF_I32, rank, shape, v, n, &h);
    if (!st)
        st = tf_session_constant_from_host(s, h, out);
    tf_tensor_release(h);
    return st;
}

static tf_status g_index_select(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    static const int32_t v[4] = {0, 2, 2, 1};
    int64_t n = 4;
    tf_eager *idx = NULL;
    tf_status st = index_const(s, 1, &n, v, 4, &idx);
    if (!st)
        st = tf_session_index_select(s, xs[0], 1, idx, out);
    tf_eager_release(idx);
    return st;
}

static tf_status g_take_along(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    static const int32_t v[4] = {1, 0, 0, 0};
    int64_t shape[2] = {2, 2};
    tf_eager *idx = NULL;
    tf_status st = index_const(s, 2, shape, v, 4, &idx);
    if (!st)
        st = tf_session_take_along_axis(s, xs[0], 0, idx, out);
    tf_eager_release(idx);
    return st;
}

static tf_status g_scatter(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    static const int32_t v[2] = {2, 2};
    int64_t n = 2;
    tf_eager *idx = NULL;
    tf_status st = index_const(s, 1, &n, v, 2, &idx);
    if (!st)
        st = tf_session_scatter(s, xs[0], 1, idx, xs[1], TF_GATHER_INDEX_SELECT, TF_SCATTER_ADD,
                                out);
    tf_eager_release(idx);
    return st;
}

static tf_status g_dynamic_slice(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    static const int32_t v[2] = {1, 5};
    int64_t n = 2, sizes[2] = {1, 2};
    tf_eager *starts = NULL;
    tf_status st = index_const(s, 1, &n, v, 2, &starts);
    if (!st)
        st = tf_session_dynamic_slice(s, xs[0], starts, sizes, out);
    tf_eager_release(starts);
    return st;
}

static tf_status g_softmax(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    return tf_session_softmax(s, xs[0], 1, out);
}

static tf_status g_layer_norm(tf_session *s, tf_eager *const *xs, tf_eager **out)
{
    return tf_session_layer_norm(s, xs[0], 1, xs[1], NULL, 1e-5, out);
}

#define M23  \
    {        \
        2, 3 \
    }
static const g_check k_checks[] = {
    {"exp", g_exp, 1, {2}, {M23}, -1, 1, 1},
    {"log", g_log, 1, {2}, {M23}, 0.5, 2, 1},
    {"sin", g_sin, 1, {2}, {M23}, -2, 2, 1},
    {"tanh", g_tanh, 1, {2}, {M23}, -2, 2, 0},
    {"sqrt", g_sqrt, 1, {2}, {M23}, 0.5, 2, 1},
    {"sigmoid", g_sigmoid, 1, {2}, {M23}, -2, 2, 0},
    {"erf", g_erf, 1, {2}, {M23}, -1.5, 1.5, 0},
    {"add (broadcast [3])", g_add, 2, {2, 1}, {M23, {3}}, -2, 2, 1},
    {"mul", g_mul, 2, {2, 2}, {M23, M23}, -2, 2, 1},
    {"div", g_div, 2, {2, 2}, {M23, M23}, 0.5, 2, 1},
    {"pow", g_pow, 2, {2, 2}, {M23, M23}, 0.5, 2, 1},
    {"maximum", g_maximum, 2, {2, 2}, {M23, M23}, -2, 2, 0},
    {"reduce_sum (axis 1)", g_sum, 1, {2}, {M23}, -2, 2, 1},
    {"reduce_prod (all)", g_prod, 1, {2}, {M23}, 0.5, 1.5, 1},
    {"reduce_max (axis 0)", g_max, 1, {2}, {M23}, -2, 2, 0},
    {"logsumexp", g_lse, 1, {2}, {M23}, -2, 2, 0},
    {"matmul", g_matmul, 2, {2, 2}, {M23, {3, 2}}, -2, 2, 1},
    {"dot_general (batch)", g_dot, 2, {3, 3}, {{2, 3, 2}, {3, 2, 2}}, -2, 2, 1},
    {"transpose", g_transpose, 1, {2}, {M23}, -2, 2, 1},
    {"reshape", g_reshape, 1, {2}, {M23}, -2, 2, 1},
    {"slice", g_slice, 1, {2}, {M23}, -2, 2, 1},
    {"concatenate", g_concat, 2, {2, 2}, {M23, {1, 3}}, -2, 2, 1},
    {"pad", g_pad, 1, {2}, {M23}, -2, 2, 1},
    {"reverse", g_reverse, 1, {2}, {M23}, -2, 2, 1},
    {"broadcast_in_dim", g_broadcast, 1, {2}, {M23}, -2, 2, 1},
    {"select (x > y ? x : y)", g_select, 2, {2, 2}, {M23, M23}, -2, 2, 0},
    {"index_select", g_index_select, 1, {2}, {M23}, -2, 2, 1},
    {"take_along_axis", g_take_along, 1, {2}, {M23}, -2, 2, 1},
    {"scatter add", g_scatter, 2, {2, 2}, {M23, {2, 2}}, -2, 2, 1},
    {"dynamic_slice", g_dynamic_slice, 1, {2}, {M23}, -2, 2, 1},
    {"softmax", g_softmax, 1, {2}, {M23}, -2, 2, 0},
    {"layer_norm", g_layer_norm, 2, {2, 1}, {M23, {3}}, -2, 2, 0},
};

/* ---- the checker ---- */

typedef struct g_run {
    ck_ctx *ctx;
    const g_check *c;
    tf_dtype dt;
    tf_status st;  /* the first failure */
    char msg[700]; /* and its message */
} g_run;

static size_t count(size_t rank, const int64_t *shape)
{
    size_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= (size_t)shape[i];
    return n;
}

static int failed(g_run *r, tf_status st, const char *where)
{
    if (!st)
        return 0;
    if (!r->st) {
        r->st = st;
        snprintf(r->msg, sizeof r->msg, "%s: %s: %s", where, tf_status_name(st), ck_error_text());
    }
    return 1;
}

/* Real coordinates per element of dtype dt: 2 for complex (re, im), else 1. */
static size_t parts(tf_dtype dt)
{
    return tf_dtype_is_complex(dt) ? 2 : 1;
}

/* The real coordinates of a tensor of r->dt's shape (2 per complex element). */
static size_t coords(const g_run *r, size_t rank, const int64_t *shape)
{
    return count(rank, shape) * parts(r->dt);
}

/* A host tensor of r->dt from doubles (a complex element from two: re, im). */
static tf_status host_tensor(const g_run *r, size_t rank, const int64_t *shape, const double *v,
                             tf_tensor **out)
{
    size_t n = count(rank, shape), m = n * parts(r->dt);
    float *f = NULL;
    if (r->dt == TF_F32 || r->dt == TF_C64) {
        f = malloc((m ? m : 1) * sizeof *f);
        if (!f)
            return TF_ERR_OUT_OF_MEMORY;
        for (size_t i = 0; i < m; i++)
            f[i] = (float)v[i];
    }
    tf_status st = tf_tensor_from_host(r->dt, rank, shape, f ? (const void *)f : v, n, out);
    free(f);
    return st;
}

/* The values of an engine tensor as doubles (allocated; 2 per complex element). */
static tf_status fetch(const g_run *r, const tf_tensor *t, double **out, size_t *n)
{
    tf_tensor *h = NULL;
    tf_status st = tf_engine_download(r->ctx->eut, t, &h);
    if (st)
        return st;
    tf_dtype dt = tf_tensor_dtype(h);
    size_t numel = tf_tensor_numel(h);
    *n = numel * parts(dt);
    int single = dt == TF_F32 || dt == TF_C64;
    double *d = malloc((*n ? *n : 1) * sizeof *d);
    float *f = single ? malloc((*n ? *n : 1) * sizeof *f) : NULL;
    if (!d || (single && !f))
        st = TF_ERR_OUT_OF_MEMORY;
    else
        st = tf_tensor_copy_to_host(h, dt, f ? (void *)f : d, numel);
    for (size_t i = 0; !st && f && i < *n; i++)
        d[i] = f[i];
    free(f);
    tf_tensor_release(h);
    if (st)
        free(d);
    else
        *out = d;
    return st;
}

/* The function at vals (one array per input), as constants; NULL on failure. */
static double *eval(g_run *r, double *const *vals, size_t *out_n)
{
    const g_check *c = r->c;
    tf_runtime *rt = NULL;
    tf_session *s = NULL;
    tf_eager *xs[3] = {0}, *y = NULL;
    double *res = NULL;
    if (failed(r, tf_runtime_create(&rt), "runtime") ||
        failed(r, tf_session_begin(rt, r->ctx->eut, &s), "session"))
        goto out;
    for (int i = 0; i < c->n; i++) {
        tf_tensor *h = NULL;
        tf_status st = host_tensor(r, c->rank[i], c->shape[i], vals[i], &h);
        if (!st)
            st = tf_session_constant_from_host(s, h, &xs[i]);
        tf_tensor_release(h);
        if (failed(r, st, "input"))
            goto out;
    }
    if (failed(r, c->fn(s, xs, &y), "forward"))
        goto out;
    failed(r, fetch(r, tf_eager_value(y), &res, out_n), "download");
out:
    tf_eager_release(y);
    for (int i = 0; i < 3; i++)
        tf_eager_release(xs[i]);
    tf_session_end(s);
    tf_runtime_release(rt);
    return res;
}

static void fill_random(double *v, size_t n, double lo, double hi, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++)
        v[i] = lo + (hi - lo) * ck_rand(seed);
}

/* VJPs and JVPs of every input by AD; vjp[i] has input i's size, jvp[i] the output's. */
static int ad_side(g_run *r, double *const *vals, const double *w, double *const *v, size_t out_n,
                   double **vjp, double **jvp)
{
    const g_check *c = r->c;
    tf_runtime *rt = NULL;
    tf_session *s = NULL;
    tf_eager *xs[3] = {0}, *y = NULL, *we = NULL;
    int ok = 0;
    if (failed(r, tf_runtime_create(&rt), "runtime") ||
        failed(r, tf_session_begin(rt, r->ctx->eut, &s), "session"))
        goto out;
    for (int i = 0; i < c->n; i++) {
        tf_tensor *h = NULL, *d = NULL;
        tf_status st = host_tensor(r, c->rank[i], c->shape[i], vals[i], &h);
        if (!st)
            st = tf_engine_upload(r->ctx->eut, h, &d);
        if (!st)
            st = tf_runtime_variable_from(rt, d, &xs[i]);
        tf_tensor_release(h);
        tf_tensor_release(d);
        if (failed(r, st, "variable"))
            goto out;
    }
    if (failed(r, c->fn(s, xs, &y), "forward"))
        goto out;
    const tf_tensor *yv = tf_eager_value(y);
    size_t y_coords = tf_tensor_numel(yv) * parts(tf_tensor_dtype(yv));
    if (y_coords != out_n) {
        snprintf(r->msg, sizeof r->msg, "forward: %zu outputs with variables, %zu with constants",
                 y_coords, out_n);
        r->st = TF_ERR_SHAPE_MISMATCH;
        goto out;
    }
    tf_tensor *wh = NULL;
    tf_status st = host_tensor(r, tf_tensor_rank(yv), tf_tensor_shape(yv), w, &wh);
    if (!st)
        st = tf_session_constant_from_host(s, wh, &we);
    tf_tensor_release(wh);
    if (failed(r, st, "cotangent"))
        goto out;
    for (int i = 0; i < c->n; i++) {
        size_t ni = coords(r, c->rank[i], c->shape[i]), got = 0;
        tf_eager *g = NULL, *ve = NULL;
        if (failed(r, tf_runtime_vjp_optional(rt, r->ctx->eut, y, xs[i], we, &g), "backward (VJP)"))
            goto out;
        if (g && failed(r, fetch(r, tf_eager_value(g), &vjp[i], &got), "download VJP")) {
            tf_eager_release(g);
            goto out;
        }
        tf_eager_release(g);
        if (!vjp[i] && !(vjp[i] = calloc(ni ? ni : 1, sizeof(double))))
            goto out;
        tf_tensor *vh = NULL;
        st = host_tensor(r, c->rank[i], c->shape[i], v[i], &vh);
        if (!st)
            st = tf_session_constant_from_host(s, vh, &ve);
        tf_tensor_release(vh);
        if (!st)
            st = tf_runtime_jvp_optional(rt, r->ctx->eut, y, xs[i], ve, &g);
        tf_eager_release(ve);
        if (failed(r, st, "forward mode (JVP)"))
            goto out;
        if (g && failed(r, fetch(r, tf_eager_value(g), &jvp[i], &got), "download JVP")) {
            tf_eager_release(g);
            goto out;
        }
        tf_eager_release(g);
        if (!jvp[i] && !(jvp[i] = calloc(out_n ? out_n : 1, sizeof(double))))
            goto out;
    }
    ok = 1;
out:
    tf_eager_release(we);
    tf_eager_release(y);
    for (int i = 0; i < 3; i++)
        tf_eager_release(xs[i]);
    tf_session_end(s);
    tf_runtime_release(rt);
    return ok;
}

/* Compares got with ref; on a mismatch writes the message and returns 0. */
static int agree(g_run *r, const char *mode, int input, const double *got, const double *ref,
                 size_t n, double tol)
{
    double scale = 1;
    for (size_t k = 0; k < n; k++)
        scale = fmax(scale, fabs(ref[k]));
    int cx = tf_dtype_is_complex(r->dt); /* coordinate k: element k / 2, re or im */
    for (size_t k = 0; k < n; k++) {
        double err = fabs(got[k] - ref[k]) / scale;
        if (!(err <= tol)) {
            snprintf(r->msg, sizeof r->msg,
                     "%s of input %d, element %zu%s: AD gives %.10g, finite "
                     "differences %.10g (error %.3g > %.3g of max(|ref|, 1))",
                     mode, input, cx ? k / 2 : k, cx ? (k % 2 ? " (imaginary part)" : " (real part)") : "",
                     got[k], ref[k], err, tol);
            return 0;
        }
    }
    return 1;
}

/* Runs one check; returns the state and leaves the detail in r->msg. */
static ck_state check_one(g_run *r, uint64_t seed)
{
    const g_check *c = r->c;
    int dbl = r->dt == TF_F64 || r->dt == TF_C128;
    double h = dbl ? 1e-6 : 1e-2, tol = dbl ? 1e-6 : 2e-2;
    double *vals[3] = {0}, *v[3] = {0}, *vjp[3] = {0}, *jvp[3] = {0}, *w = NULL, *y0 = NULL;
    double *rev = NULL, *fwd = NULL;
    size_t out_n = 0;
    ck_state state = CK_FAIL;
    for (int i = 0; i < c->n; i++) {
        size_t ni = coords(r, c->rank[i], c->shape[i]);
        vals[i] = malloc((ni ? ni : 1) * sizeof(double));
        v[i] = malloc((ni ? ni : 1) * sizeof(double));
        if (!vals[i] || !v[i])
            goto out;
        fill_random(vals[i], ni, c->lo, c->hi, &seed);
        fill_random(v[i], ni, -1, 1, &seed);
        if (!dbl) /* the values the engine sees */
            for (size_t k = 0; k < ni; k++)
                vals[i][k] = (float)vals[i][k];
    }
    if (!(y0 = eval(r, vals, &out_n)))
        goto out;
    if (!(w = malloc((out_n ? out_n : 1) * sizeof *w)))
        goto out;
    fill_random(w, out_n, -1, 1, &seed);
    if (!ad_side(r, vals, w, v, out_n, vjp, jvp))
        goto out;
    if (!(fwd = malloc((out_n ? out_n : 1) * sizeof *fwd)))
        goto out;
    state = CK_PASS;
    for (int i = 0; i < c->n && state == CK_PASS; i++) {
        size_t ni = coords(r, c->rank[i], c->shape[i]);
        free(rev);
        if (!(rev = calloc(ni ? ni : 1, sizeof *rev))) {
            state = CK_FAIL;
            break;
        }
        memset(fwd, 0, (out_n ? out_n : 1) * sizeof *fwd);
        for (size_t k = 0; k < ni && state == CK_PASS; k++) {
            double x0 = vals[i][k], hk = h * fmax(1.0, fabs(x0));
            size_t np = 0, nm = 0;
            vals[i][k] = x0 + hk;
            double *yp = eval(r, vals, &np);
            vals[i][k] = x0 - hk;
            double *ym = eval(r, vals, &nm);
            vals[i][k] = x0;
            if (!yp || !ym || np != out_n || nm != out_n) {
                state = CK_FAIL;
            } else {
                for (size_t j = 0; j < out_n; j++) {
                    double dd = (yp[j] - ym[j]) / (2 * hk);
                    rev[k] += w[j] * dd;
                    fwd[j] += dd * v[i][k];
                }
            }
            free(yp);
            free(ym);
        }
        if (state == CK_PASS && (!agree(r, "reverse mode (VJP)", i, vjp[i], rev, ni, tol) ||
                                 !agree(r, "forward mode (JVP)", i, jvp[i], fwd, out_n, tol)))
            state = CK_FAIL;
    }
out:
    if (r->st == TF_ERR_UNSUPPORTED)
        state = CK_UNSUP;
    else if (state != CK_PASS && !r->msg[0])
        snprintf(r->msg, sizeof r->msg, "the kit ran out of memory");
    for (int i = 0; i < 3; i++) {
        free(vals[i]);
        free(v[i]);
        free(vjp[i]);
        free(jvp[i]);
    }
    free(w);
    free(y0);
    free(rev);
    free(fwd);
    return state;
}

/* The dtype the checks run in: f64 where the engine multiplies it, else f32. */
static tf_dtype grads_dtype(ck_ctx *ctx)
{
    tf_dtype d3[3] = {TF_F64, TF_F64, TF_F64};
    return ck_claims(ctx, NULL, TF_F64, TF_PRIM_BINARY, TF_BINARY_MUL, d3, 3) > 0 ? TF_F64 : TF_F32;
}

/* The complex dtype the complex checks run in: c128 where the engine multiplies it, else
   c64 where it multiplies that; TF_DTYPE_COUNT for none (or an engine older than 1.4,
   which is never asked about complex). */
static tf_dtype grads_complex_dtype(ck_ctx *ctx)
{
    static const tf_dtype k_order[2] = {TF_C128, TF_C64};
    for (int i = 0; i < 2; i++) {
        tf_dtype d = k_order[i], d3[3] = {d, d, d};
        if (ck_wants_dtype(ctx, d) &&
            ck_claims(ctx, NULL, d, TF_PRIM_BINARY, TF_BINARY_MUL, d3, 3) > 0)
            return d;
    }
    return TF_DTYPE_COUNT;
}

#define N_CHECKS ((int)(sizeof k_checks / sizeof k_checks[0]))

/* Check `index` (a job of isolate.c): k_checks[index] in the real dtype, or for
   index >= N_CHECKS k_checks[index - N_CHECKS] in the complex one. */
void ck_grads_one(ck_ctx *ctx, int index)
{
    int i = index % N_CHECKS;
    tf_dtype dt = index < N_CHECKS ? grads_dtype(ctx) : grads_complex_dtype(ctx);
    if (dt == TF_DTYPE_COUNT)
        return; /* not asked: ck_run_grads makes no such job */
    g_run r = {.ctx = ctx, .c = &k_checks[i], .dt = dt};
    tf_error_clear();
    ck_doing("gradient check of %s (%s)", k_checks[i].name, tf_dtype_name(dt));
    ck_state s = check_one(&r, 0x6a09e667f3bcc908ull + (uint64_t)index);
    if (s == CK_PASS)
        ck_line_add(ctx, CK_SEC_GRADS, s, "%s (%s): VJP and JVP match finite differences",
                    k_checks[i].name, tf_dtype_name(dt));
    else
        ck_line_add(ctx, CK_SEC_GRADS, s, "%s (%s): %s", k_checks[i].name, tf_dtype_name(dt),
                    r.msg);
}

void ck_run_grads(ck_ctx *ctx)
{
    tf_dtype real = grads_dtype(ctx), cx = grads_complex_dtype(ctx);
    ck_iso_group(ctx);
    for (int index = 0; index < 2 * N_CHECKS; index++) {
        const g_check *c = &k_checks[index % N_CHECKS];
        int complex_pass = index >= N_CHECKS;
        if ((ctx->quick && index % 2) || (complex_pass && (cx == TF_DTYPE_COUNT || !c->complex_ok)))
            continue;
        char what[96];
        snprintf(what, sizeof what, "gradient check of %s (%s)", c->name,
                 tf_dtype_name(complex_pass ? cx : real));
        ck_iso_check(ctx, CK_SEC_GRADS, ck_grads_one, index, what);
    }
}
