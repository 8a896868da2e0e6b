/*
 * test_ops_contract.c - dot_general and matmul of the eager runtime.
 *
 * Forward values are compared with a naive reference contraction written
 * here (output axes [lhs free, rhs free, batch in lhs_batch order]) for
 * every dimension-number case, and with hand-computed products. Both rules
 * are gradient-checked (reverse and forward mode against central
 * differences in f64) on contractions over several axes paired out of
 * order, batch axes listed out of order, outer products, rank-0 operands,
 * negative axes, batch-only products, full contractions to a scalar,
 * zero-size contracting extents, non-contiguous operands and the same
 * tensor on both sides (also pairing an axis with a different one); second
 * derivatives are checked through tf_runtime_grad inside the function.
 * Every validation error is checked not to write *out.
 */
#include <math.h>

#include <tenferro/ops.h>

#include "tf_eager_test.h"
#include "tf_gradcheck.h"

/* ===================================================================== */
/* Helpers                                                                */
/* ===================================================================== */

static void expect_near(const double *got, const double *want, size_t n, double rel)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= rel * fmax(fabs(want[i]), 1.0)))
            fail_msg("element %zu: got %.17g, want %.17g", i, got[i], want[i]);
}

static tf_dot_dims dims_of(size_t nc, const int *lc, const int *rc, size_t nb, const int *lb,
                           const int *rb)
{
    tf_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contracting = nc;
    d.n_batch = nb;
    for (size_t i = 0; i < nc; i++) {
        d.lhs_contracting[i] = lc[i];
        d.rhs_contracting[i] = rc[i];
    }
    for (size_t i = 0; i < nb; i++) {
        d.lhs_batch[i] = lb[i];
        d.rhs_batch[i] = rb[i];
    }
    return d;
}

/* ---- the naive reference contraction ---- */

static int norm(int a, size_t rank)
{
    return a < 0 ? a + (int)rank : a;
}

/* Column-major offset of the multi-index idx in shape. */
static size_t offset_of(const int64_t *idx, const int64_t *shape, size_t rank)
{
    size_t off = 0, stride = 1;
    for (size_t d = 0; d < rank; d++) {
        off += (size_t)idx[d] * stride;
        stride *= (size_t)shape[d];
    }
    return off;
}

/* Decodes a column-major linear index into idx over shape. */
static void index_of(size_t lin, const int64_t *shape, size_t rank, int64_t *idx)
{
    for (size_t d = 0; d < rank; d++) {
        idx[d] = shape[d] ? (int64_t)(lin % (size_t)shape[d]) : 0;
        lin = shape[d] ? lin / (size_t)shape[d] : 0;
    }
}

typedef struct operand {
    size_t rank;
    int64_t shape[8];
    const double *data;
} operand;

/* An operand's free axes (in neither list), ascending. */
static size_t free_of(const operand *o, const int *c, const int *b, const tf_dot_dims *d, int *out)
{
    size_t n = 0;
    for (int a = 0; a < (int)o->rank; a++) {
        int used = 0;
        for (size_t i = 0; i < d->n_contracting; i++)
            used |= norm(c[i], o->rank) == a;
        for (size_t i = 0; i < d->n_batch; i++)
            used |= norm(b[i], o->rank) == a;
        if (!used)
            out[n++] = a;
    }
    return n;
}

/* out = dot_general(l, r, d) by definition; returns the output's element count. */
static size_t ref_dot(const operand *l, const operand *r, const tf_dot_dims *d, double *out,
                      int64_t *out_shape, size_t *out_rank)
{
    int lf[8], rf[8];
    size_t nl = free_of(l, d->lhs_contracting, d->lhs_batch, d, lf);
    size_t nr = free_of(r, d->rhs_contracting, d->rhs_batch, d, rf);
    size_t rank = 0, n_out = 1, n_c = 1;
    int64_t cshape[8];
    for (size_t i = 0; i < nl; i++)
        out_shape[rank++] = l->shape[lf[i]];
    for (size_t i = 0; i < nr; i++)
        out_shape[rank++] = r->shape[rf[i]];
    for (size_t i = 0; i < d->n_batch; i++)
        out_shape[rank++] = l->shape[norm(d->lhs_batch[i], l->rank)];
    for (size_t i = 0; i < rank; i++)
        n_out *= (size_t)out_shape[i];
    for (size_t i = 0; i < d->n_contracting; i++)
        n_c *= (size_t)(cshape[i] = l->shape[norm(d->lhs_contracting[i], l->rank)]);
    for (size_t k = 0; k < n_out; k++) {
        int64_t oi[8], ci[8], li[8] = {0}, ri[8] = {0};
        index_of(k, out_shape, rank, oi);
        for (size_t i = 0; i < nl; i++)
            li[lf[i]] = oi[i];
        for (size_t i = 0; i < nr; i++)
            ri[rf[i]] = oi[nl + i];
        for (size_t i = 0; i < d->n_batch; i++) {
            li[norm(d->lhs_batch[i], l->rank)] = oi[nl + nr + i];
            ri[norm(d->rhs_batch[i], r->rank)] = oi[nl + nr + i];
        }
        double acc = 0;
        for (size_t c = 0; c < n_c; c++) {
            index_of(c, cshape, d->n_contracting, ci);
            for (size_t i = 0; i < d->n_contracting; i++) {
                li[norm(d->lhs_contracting[i], l->rank)] = ci[i];
                ri[norm(d->rhs_contracting[i], r->rank)] = ci[i];
            }
            acc += l->data[offset_of(li, l->shape, l->rank)] *
                   r->data[offset_of(ri, r->shape, r->rank)];
        }
        out[k] = acc;
    }
    *out_rank = rank;
    return n_out;
}

/* ---- input shapes ---- */

/* ===================================================================== */
/* Cases                                                                  */
/* ===================================================================== */

typedef struct dot_case {
    const char *name;
    gc_spec lhs, rhs;
    int same; /* rhs is the lhs tensor itself */
    size_t nc, nb;
    int lc[4], rc[4], lb[4], rb[4];
    size_t out_rank;
    int64_t out_shape[6];
} dot_case;

static const dot_case k_cases[] = {
    {"matmul",
     {2, {3, 4}, GC_PLAIN},
     {2, {4, 5}, GC_PLAIN},
     0,
     1,
     0,
     {1},
     {0},
     {0},
     {0},
     2,
     {3, 5}},
    {"two contracting axes paired out of order",
     {3, {2, 3, 4}, GC_PLAIN},
     {3, {4, 3, 5}, GC_PLAIN},
     0,
     2,
     0,
     {2, 1},
     {0, 1},
     {0},
     {0},
     2,
     {2, 5}},
    {"unsorted batch",
     {3, {2, 3, 4}, GC_PLAIN},
     {4, {4, 2, 5, 3}, GC_PLAIN},
     0,
     1,
     2,
     {1},
     {3},
     {2, 0},
     {0, 1},
     3,
     {5, 4, 2}},
    {"OPS.md example",
     {3, {2, 3, 2}, GC_PLAIN},
     {3, {2, 3, 1}, GC_PLAIN},
     0,
     1,
     1,
     {1},
     {1},
     {2},
     {0},
     3,
     {2, 1, 2}},
    {"outer", {1, {3}, GC_PLAIN}, {2, {2, 2}, GC_PLAIN}, 0, 0, 0, {0}, {0}, {0}, {0}, 3, {3, 2, 2}},
    {"rank 0 times vector",
     {0, {0}, GC_PLAIN},
     {1, {3}, GC_PLAIN},
     0,
     0,
     0,
     {0},
     {0},
     {0},
     {0},
     1,
     {3}},
    {"rank 0 times rank 0",
     {0, {0}, GC_PLAIN},
     {0, {0}, GC_PLAIN},
     0,
     0,
     0,
     {0},
     {0},
     {0},
     {0},
     0,
     {0}},
    {"negative axes",
     {2, {4, 3}, GC_PLAIN},
     {2, {3, 2}, GC_PLAIN},
     0,
     1,
     0,
     {-1},
     {-2},
     {0},
     {0},
     2,
     {4, 2}},
    {"batch only",
     {2, {3, 2}, GC_PLAIN},
     {2, {2, 3}, GC_PLAIN},
     0,
     0,
     2,
     {0},
     {0},
     {0, 1},
     {1, 0},
     2,
     {3, 2}},
    {"full contraction",
     {2, {2, 3}, GC_PLAIN},
     {2, {3, 2}, GC_PLAIN},
     0,
     2,
     0,
     {0, 1},
     {1, 0},
     {0},
     {0},
     0,
     {0}},
    {"batch leading, contracting trailing",
     {3, {3, 2, 4}, GC_PLAIN},
     {3, {3, 4, 2}, GC_PLAIN},
     0,
     1,
     1,
     {2},
     {1},
     {0},
     {0},
     3,
     {2, 2, 3}},
    {"transposed and reversed",
     {2, {3, 4}, GC_TRANSPOSED},
     {2, {4, 2}, GC_REVERSED},
     0,
     1,
     0,
     {1},
     {0},
     {0},
     {0},
     2,
     {3, 2}},
    {"sliced, batch",
     {3, {2, 3, 2}, GC_SLICED},
     {3, {2, 3, 2}, GC_TRANSPOSED},
     0,
     1,
     1,
     {1},
     {1},
     {0},
     {0},
     3,
     {2, 2, 2}},
    {"zero-size contraction",
     {2, {2, 0}, GC_PLAIN},
     {2, {0, 3}, GC_PLAIN},
     0,
     1,
     0,
     {1},
     {0},
     {0},
     {0},
     2,
     {2, 3}},
    {"zero-size free axis",
     {2, {0, 3}, GC_PLAIN},
     {2, {3, 2}, GC_PLAIN},
     0,
     1,
     0,
     {1},
     {0},
     {0},
     {0},
     2,
     {0, 2}},
    {"same tensor: x @ x",
     {2, {3, 3}, GC_PLAIN},
     {0, {0}, GC_PLAIN},
     1,
     1,
     0,
     {1},
     {0},
     {0},
     {0},
     2,
     {3, 3}},
    {"same tensor: x^T-like pairing",
     {2, {3, 3}, GC_PLAIN},
     {0, {0}, GC_PLAIN},
     1,
     1,
     0,
     {0},
     {1},
     {0},
     {0},
     2,
     {3, 3}},
    {"same tensor: batch paired with another axis",
     {3, {2, 3, 2}, GC_PLAIN},
     {0, {0}, GC_PLAIN},
     1,
     1,
     1,
     {1},
     {1},
     {2},
     {0},
     3,
     {2, 2, 2}},
    {"same tensor: outer",
     {2, {2, 3}, GC_PLAIN},
     {0, {0}, GC_PLAIN},
     1,
     0,
     0,
     {0},
     {0},
     {0},
     {0},
     4,
     {2, 3, 2, 3}},
    {"same tensor, transposed: full contraction",
     {2, {3, 3}, GC_TRANSPOSED},
     {0, {0}, GC_PLAIN},
     1,
     2,
     0,
     {0, 1},
     {1, 0},
     {0},
     {0},
     0,
     {0}},
};
#define N_CASES (sizeof k_cases / sizeof k_cases[0])

static tf_dot_dims case_dims(const dot_case *c)
{
    return dims_of(c->nc, c->lc, c->rc, c->nb, c->lb, c->rb);
}

static tf_status call_dot(tf_session *s, tf_eager *const *xs, size_t n, void *user, tf_eager **out)
{
    const dot_case *c = user;
    tf_dot_dims d = case_dims(c);
    return tf_session_dot_general(s, xs[0], n == 2 ? xs[1] : xs[0], &d, out);
}

static double *host_values(const tf_tensor *t)
{
    size_t n = tf_tensor_numel(t);
    double *d = calloc(n ? n : 1, sizeof *d);
    assert_non_null(d);
    if (n)
        TF_ASSERT_OK(tf_tensor_copy_to_host(t, TF_F64, d, n));
    return d;
}

/* Every case's forward value and shape against the naive reference. */
static void test_values_against_reference(void **state)
{
    (void)state;
    unsigned seed = 21;
    tft_env f = tft_env_begin();
    for (size_t k = 0; k < N_CASES; k++) {
        const dot_case *c = &k_cases[k];
        tf_tensor *lt = gc_random_view(&c->lhs, -1, 1, &seed);
        tf_tensor *rt =
            c->same ? (tf_tensor_retain(lt), lt) : gc_random_view(&c->rhs, -1, 1, &seed);
        tf_eager *l = NULL, *r = NULL, *y = NULL;
        TF_ASSERT_OK(tf_runtime_constant_from(f.rt, lt, &l));
        TF_ASSERT_OK(tf_runtime_constant_from(f.rt, rt, &r));
        tf_dot_dims d = case_dims(c);
        TF_ASSERT_OK(tf_session_dot_general(f.s, l, r, &d, &y));
        tft_expect_shape(y, c->out_rank, c->out_shape);
        operand lo = {tf_tensor_rank(lt), {0}, host_values(lt)};
        operand ro = {tf_tensor_rank(rt), {0}, host_values(rt)};
        memcpy(lo.shape, tf_tensor_shape(lt), lo.rank * sizeof lo.shape[0]);
        memcpy(ro.shape, tf_tensor_shape(rt), ro.rank * sizeof ro.shape[0]);
        double want[256];
        int64_t wshape[8];
        size_t wrank, n = ref_dot(&lo, &ro, &d, want, wshape, &wrank);
        assert_int_equal(wrank, c->out_rank);
        double *got = host_values(tf_eager_value(y));
        assert_int_equal(tf_tensor_numel(tf_eager_value(y)), n);
        expect_near(got, want, n, 1e-14);
        free(got);
        free((void *)lo.data);
        free((void *)ro.data);
        tf_eager_release(y);
        tf_eager_release(l);
        tf_eager_release(r);
        tf_tensor_release(lt);
        tf_tensor_release(rt);
    }
    tft_env_end(&f);
}

static void test_gradcheck(void **state)
{
    (void)state;
    unsigned seed = 22;
    for (size_t k = 0; k < N_CASES; k++) {
        const dot_case *c = &k_cases[k];
        tf_tensor *in[2] = {gc_random_view(&c->lhs, -1, 1, &seed), NULL};
        if (!c->same)
            in[1] = gc_random_view(&c->rhs, -1, 1, &seed);
        char what[96];
        snprintf(what, sizeof what, "dot_general, %s", c->name);
        gc_check(what, g_cpu, call_dot, (void *)c, in, c->same ? 1 : 2, NULL);
        tf_tensor_release(in[0]);
        tf_tensor_release(in[1]);
    }
}

static tf_status call_matmul(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                             tf_eager **out)
{
    (void)user;
    return tf_session_matmul(s, xs[0], n == 2 ? xs[1] : xs[0], out);
}

static void test_matmul_gradcheck(void **state)
{
    (void)state;
    static const gc_spec pairs[][2] = {
        {{2, {1, 1}, GC_PLAIN}, {2, {1, 1}, GC_PLAIN}},
        {{2, {2, 3}, GC_PLAIN}, {2, {3, 1}, GC_PLAIN}},
        {{2, {4, 3}, GC_TRANSPOSED}, {2, {3, 2}, GC_SLICED}},
        {{2, {3, 2}, GC_REVERSED}, {2, {2, 4}, GC_TRANSPOSED}},
        {{2, {3, 3}, GC_PLAIN}, {0, {0}, GC_PLAIN}}, /* x @ x */
    };
    unsigned seed = 23;
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        int same = pairs[k][1].rank == 0;
        tf_tensor *in[2] = {gc_random_view(&pairs[k][0], -1, 1, &seed), NULL};
        if (!same)
            in[1] = gc_random_view(&pairs[k][1], -1, 1, &seed);
        char what[64];
        snprintf(what, sizeof what, "matmul, pair %zu", k);
        gc_check(what, g_cpu, call_matmul, NULL, in, same ? 1 : 2, NULL);
        tf_tensor_release(in[0]);
        tf_tensor_release(in[1]);
    }
}

/* ---- second order: <grad_x(sum(tanh(dot(x, y)) * W)), C> ---- */

/* A deterministic constant of t's shape (the same on every call). */
static tf_status fixed_like(tf_session *s, const tf_tensor *t, unsigned seed, tf_eager **out)
{
    tf_tensor *h = gc_random(tf_tensor_rank(t), tf_tensor_shape(t), -1, 1, &seed);
    tf_status st = tf_session_constant_from_host(s, h, out);
    tf_tensor_release(h);
    return st;
}

static tf_status call_dot_grad(tf_session *s, tf_eager *const *xs, size_t n, void *user,
                               tf_eager **out)
{
    tf_runtime *rt = tf_session_runtime(s);
    tf_scope sc;
    tf_status st = tf_scope_begin_capture_trace(rt, &sc); /* makes constants targets too */
    if (st)
        return st;
    tf_eager *y = NULL, *th = NULL, *w = NULL, *wy = NULL, *l = NULL, *g = NULL, *c = NULL,
             *gc = NULL;
    st = call_dot(s, xs, n, user, &y);
    if (!st)
        st = tf_session_tanh(s, y, &th);
    if (!st)
        st = fixed_like(s, tf_eager_value(y), 77, &w);
    if (!st)
        st = tf_session_mul(s, th, w, &wy);
    if (!st)
        st = tf_session_reduce_sum(s, wy, NULL, 0, &l);
    if (!st)
        st = tf_runtime_grad(rt, tf_session_engine(s), l, xs[0], &g);
    if (!st)
        st = fixed_like(s, tf_eager_value(xs[0]), 78, &c);
    if (!st)
        st = tf_session_mul(s, g, c, &gc);
    if (!st)
        st = tf_session_reduce_sum(s, gc, NULL, 0, out);
    tf_scope_end(&sc);
    tf_eager *all[] = {y, th, w, wy, l, g, c, gc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    return st;
}

static void test_second_order(void **state)
{
    (void)state;
    static const size_t picks[] = {0, 1, 2, 4, 11, 15, 17};
    unsigned seed = 24;
    gc_options o = {1e-5, 1e-5, 5, 0, 0};
    for (size_t k = 0; k < sizeof picks / sizeof picks[0]; k++) {
        const dot_case *c = &k_cases[picks[k]];
        tf_tensor *in[2] = {gc_random_view(&c->lhs, -1, 1, &seed), NULL};
        if (!c->same)
            in[1] = gc_random_view(&c->rhs, -1, 1, &seed);
        char what[96];
        snprintf(what, sizeof what, "grad of dot_general, %s", c->name);
        gc_check(what, g_cpu, call_dot_grad, (void *)c, in, c->same ? 1 : 2, &o);
        tf_tensor_release(in[0]);
        tf_tensor_release(in[1]);
    }
}

/* ===================================================================== */
/* Hand-computed values and gradients                                     */
/* ===================================================================== */

/* [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]]; d sum / dx = rows of y summed. */
static void test_matmul_values(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const int64_t sh[2] = {2, 2};
    static const double x[4] = {1, 3, 2, 4}, y[4] = {5, 7, 6, 8};
    static const double want[4] = {19, 43, 22, 50};
    tf_eager *xe = tft_eager(f.rt, TF_F64, 1, 2, sh, x, 4),
             *ye = tft_eager(f.rt, TF_F64, 0, 2, sh, y, 4);
    tf_eager *z = NULL, *l = NULL, *g = NULL;
    TF_ASSERT_OK(tf_session_matmul(f.s, xe, ye, &z));
    double got[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(z), TF_F64, got, 4));
    expect_near(got, want, 4, 0);
    /* only x is a variable: d sum(x y) / dx[i,k] = sum_j y[k,j] = [11, 15] per row */
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, z, NULL, 0, &l));
    TF_ASSERT_OK(tf_runtime_grad(f.rt, g_cpu, l, xe, &g));
    static const double gw[4] = {11, 11, 15, 15};
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(g), TF_F64, got, 4));
    expect_near(got, gw, 4, 0);
    tf_eager *all[] = {xe, ye, z, l, g};
    for (size_t i = 0; i < 5; i++)
        tf_eager_release(all[i]);
    /* both variables, l = sum(w * sum_j z[:, j]) with w = [1, 2]: the cotangent of z is
       w spread along axis 1 (a stride-0 view) and feeds both products, made dense once
       by the rule. dx[i,k] = w[i] sum_j y[k,j], dy[k,j] = sum_i w[i] x[i,k] */
    xe = tft_eager(f.rt, TF_F64, 1, 2, sh, x, 4);
    ye = tft_eager(f.rt, TF_F64, 1, 2, sh, y, 4);
    static const int64_t sh1[1] = {2};
    tf_eager *w = tft_eager(f.rt, TF_F64, 0, 1, sh1, (double[]){1, 2}, 2), *r = NULL, *wr = NULL;
    TF_ASSERT_OK(tf_session_matmul(f.s, xe, ye, &z));
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, z, (int[]){1}, 1, &r));
    TF_ASSERT_OK(tf_session_mul(f.s, w, r, &wr));
    TF_ASSERT_OK(tf_session_reduce_sum(f.s, wr, NULL, 0, &l));
    TF_ASSERT_OK(tf_eager_backward(l, g_cpu));
    static const double gx2[4] = {11, 22, 15, 30}, gy[4] = {7, 10, 7, 10};
    tf_tensor *gt = NULL;
    TF_ASSERT_OK(tf_eager_grad(xe, &gt));
    TF_ASSERT_OK(tf_tensor_copy_to_host(gt, TF_F64, got, 4));
    expect_near(got, gx2, 4, 0);
    tf_tensor_release(gt);
    TF_ASSERT_OK(tf_eager_grad(ye, &gt));
    TF_ASSERT_OK(tf_tensor_copy_to_host(gt, TF_F64, got, 4));
    expect_near(got, gy, 4, 0);
    tf_tensor_release(gt);
    tf_eager *more[] = {xe, ye, z, l, w, r, wr};
    for (size_t i = 0; i < 7; i++)
        tf_eager_release(more[i]);
    tft_env_end(&f);
}

/* Integer and f32 contractions. */
static void test_other_dtypes(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    static const int64_t sh[2] = {2, 2};
    static const int32_t xi[4] = {1, 3, 2, 4}, yi[4] = {5, 7, 6, 8};
    static const int64_t xl[4] = {1, 3, 2, 4}, yl[4] = {5, 7, 6, 8};
    static const float xf[4] = {1, 3, 2, 4}, yf[4] = {5, 7, 6, 8};
    tf_eager *a = tft_eager(f.rt, TF_I32, 0, 2, sh, xi, 4),
             *b = tft_eager(f.rt, TF_I32, 0, 2, sh, yi, 4);
    tf_eager *z = NULL;
    TF_ASSERT_OK(tf_session_matmul(f.s, a, b, &z));
    int32_t gi[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(z), TF_I32, gi, 4));
    assert_true(gi[0] == 19 && gi[1] == 43 && gi[2] == 22 && gi[3] == 50);
    tf_eager_release(z);
    tf_eager_release(a);
    tf_eager_release(b);
    a = tft_eager(f.rt, TF_I64, 0, 2, sh, xl, 4);
    b = tft_eager(f.rt, TF_I64, 0, 2, sh, yl, 4);
    static const int lc[1] = {0}, rc[1] = {0};
    tf_dot_dims d = dims_of(1, lc, rc, 0, NULL, NULL); /* x^T y */
    TF_ASSERT_OK(tf_session_dot_general(f.s, a, b, &d, &z));
    int64_t gl[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(z), TF_I64, gl, 4));
    assert_true(gl[0] == 26 && gl[1] == 38 && gl[2] == 30 && gl[3] == 44);
    tf_eager_release(z);
    tf_eager_release(a);
    tf_eager_release(b);
    a = tft_eager(f.rt, TF_F32, 1, 2, sh, xf, 4);
    b = tft_eager(f.rt, TF_F32, 1, 2, sh, yf, 4);
    TF_ASSERT_OK(tf_session_matmul(f.s, a, b, &z));
    float gf[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(z), TF_F32, gf, 4));
    assert_true(gf[0] == 19 && gf[1] == 43 && gf[2] == 22 && gf[3] == 50);
    tf_eager_release(z);
    tf_eager_release(a);
    tf_eager_release(b);
    tft_env_end(&f);
}

/* ===================================================================== */
/* Errors                                                                 */
/* ===================================================================== */

static void test_errors(void **state)
{
    (void)state;
    tft_env f = tft_env_begin();
    tf_runtime *other;
    TF_ASSERT_OK(tf_runtime_create(&other));
    static const int64_t s23[2] = {2, 3}, s34[2] = {3, 4}, s3[1] = {3}, s5[5] = {1, 1, 1, 1, 1};
    static const int64_t s4[4] = {1, 1, 1, 1};
    static const double d[12] = {0};
    static const int32_t di[12] = {0};
    static const uint8_t db[12] = {0};
    tf_eager *a = tft_eager(f.rt, TF_F64, 1, 2, s23, d, 6),
             *b = tft_eager(f.rt, TF_F64, 1, 2, s34, d, 12);
    tf_eager *v = tft_eager(f.rt, TF_F64, 0, 1, s3, d, 3),
             *ai = tft_eager(f.rt, TF_I32, 0, 2, s23, di, 6);
    tf_eager *ab = tft_eager(f.rt, TF_BOOL, 0, 2, s23, db, 6);
    tf_eager *bb = tft_eager(f.rt, TF_BOOL, 0, 2, s34, db, 12);
    tf_eager *bo = tft_eager(other, TF_F64, 1, 2, s34, d, 12);
    tf_eager *r5 = tft_eager(f.rt, TF_F64, 0, 5, s5, d, 1),
             *r4 = tft_eager(f.rt, TF_F64, 0, 4, s4, d, 1);
    static char sentinel_storage;
    tf_eager *sentinel = (tf_eager *)&sentinel_storage, *out = sentinel;
    static const int one[1] = {1}, zero[1] = {0}, two[1] = {2}, m3[1] = {-3};
    tf_dot_dims ok = dims_of(1, one, zero, 0, NULL, NULL);
    tft_expect_error(tf_session_dot_general(NULL, a, b, &ok, &out), TF_ERR_VALIDATION, "session",
                     out, sentinel);
    tft_expect_error(tf_session_dot_general(f.s, NULL, b, &ok, &out), TF_ERR_VALIDATION, "lhs", out,
                     sentinel);
    tft_expect_error(tf_session_dot_general(f.s, a, NULL, &ok, &out), TF_ERR_VALIDATION, "rhs", out,
                     sentinel);
    tft_expect_error(tf_session_dot_general(f.s, a, b, NULL, &out), TF_ERR_VALIDATION, "dims", out,
                     sentinel);
    tft_expect_error(tf_session_dot_general(f.s, a, b, &ok, NULL), TF_ERR_VALIDATION, "out", out,
                     sentinel);
    tft_expect_error(tf_session_dot_general(f.s, a, bo, &ok, &out), TF_ERR_CONTEXT_MISMATCH, "rhs",
                     out, sentinel);
    tft_expect_error(tf_session_dot_general(f.s, ai, b, &ok, &out), TF_ERR_DTYPE_MISMATCH, "rhs",
                     out, sentinel);
    tft_expect_error(tf_session_dot_general(f.s, ab, bb, &ok, &out), TF_ERR_DTYPE_MISMATCH, "lhs",
                     out, sentinel);
    /* more axes than the operand has */
    static const int c3[3] = {0, 1, 0};
    tf_dot_dims too_many = dims_of(1, one, zero, 2, c3 + 1, c3);
    tft_expect_error(tf_session_dot_general(f.s, v, b, &too_many, &out), TF_ERR_VALIDATION, "dims",
                     out, sentinel);
    tf_dot_dims oob = dims_of(1, two, zero, 0, NULL, NULL);
    tft_expect_error(tf_session_dot_general(f.s, a, b, &oob, &out), TF_ERR_AXIS_OUT_OF_BOUNDS,
                     "lhs_contracting", out, sentinel);
    tf_dot_dims oob_neg = dims_of(1, one, m3, 0, NULL, NULL);
    tft_expect_error(tf_session_dot_general(f.s, a, b, &oob_neg, &out), TF_ERR_AXIS_OUT_OF_BOUNDS,
                     "rhs_contracting", out, sentinel);
    /* lhs axis 1 both contracted and batched; rhs axis 0 listed twice via -2 */
    static const int m2[1] = {-2};
    tf_dot_dims twice_l = dims_of(1, one, zero, 1, one, one);
    tft_expect_error(tf_session_dot_general(f.s, a, b, &twice_l, &out), TF_ERR_VALIDATION,
                     "lhs_batch", out, sentinel);
    tf_dot_dims twice_r = dims_of(1, zero, zero, 1, one, m2);
    tft_expect_error(tf_session_dot_general(f.s, b, b, &twice_r, &out), TF_ERR_VALIDATION,
                     "rhs_batch", out, sentinel);
    /* extents differ: lhs axis 0 (2) with rhs axis 0 (3); batch 2 vs 4 */
    tf_dot_dims bad_c = dims_of(1, zero, zero, 0, NULL, NULL);
    tft_expect_error(tf_session_dot_general(f.s, a, b, &bad_c, &out), TF_ERR_SHAPE_MISMATCH, "dims",
                     out, sentinel);
    tf_dot_dims bad_b = dims_of(1, one, zero, 1, zero, one);
    tft_expect_error(tf_session_dot_general(f.s, a, b, &bad_b, &out), TF_ERR_SHAPE_MISMATCH, "dims",
                     out, sentinel);
    /* an outer product of rank 5 and rank 4 would have rank 9 */
    tf_dot_dims outer = dims_of(0, NULL, NULL, 0, NULL, NULL);
    tft_expect_error(tf_session_dot_general(f.s, r5, r4, &outer, &out), TF_ERR_RANK_TOO_LARGE,
                     "dims", out, sentinel);
    /* matmul */
    tft_expect_error(tf_session_matmul(f.s, v, b, &out), TF_ERR_SHAPE_MISMATCH, "x", out, sentinel);
    tft_expect_error(tf_session_matmul(f.s, a, v, &out), TF_ERR_SHAPE_MISMATCH, "y", out, sentinel);
    tft_expect_error(tf_session_matmul(f.s, b, a, &out), TF_ERR_SHAPE_MISMATCH, "y", out, sentinel);
    tft_expect_error(tf_session_matmul(f.s, ai, b, &out), TF_ERR_DTYPE_MISMATCH, "y", out,
                     sentinel);
    tft_expect_error(tf_session_matmul(f.s, a, bo, &out), TF_ERR_CONTEXT_MISMATCH, "y", out,
                     sentinel);
    tft_expect_error(tf_session_matmul(f.s, NULL, b, &out), TF_ERR_VALIDATION, "x", out, sentinel);
    tft_expect_error(tf_session_matmul(f.s, a, b, NULL), TF_ERR_VALIDATION, "out", out, sentinel);
    tf_eager *all[] = {a, b, v, ai, ab, bb, bo, r5, r4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        tf_eager_release(all[i]);
    tf_runtime_release(other);
    tft_env_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_against_reference),
        cmocka_unit_test(test_gradcheck),
        cmocka_unit_test(test_matmul_gradcheck),
        cmocka_unit_test(test_second_order),
        cmocka_unit_test(test_matmul_values),
        cmocka_unit_test(test_other_dtypes),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, tft_cpu_setup, tft_cpu_teardown);
}
