/*
 * tf_prog_ops.c - how each op of a program file is issued through the C API:
 * the ops of shared/oracle/OPS.md (formats 1 and 2, f64 and c128) and a few
 * the differential checker adds for the rest of the surface (cast round
 * trips, triangular_solve, lstsq, gather, and gauge-free views of the
 * eigenvectors and of the SVD and QR factors).
 *
 * Each entry takes the op's argument values and attributes and returns the
 * result (one new reference) or the library's status. Attributes that are
 * missing or malformed are TF_ERR_VALIDATION with a message in the run; the
 * generated and reference files never have them, so that is a driver error.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tf_prog_internal.h"

/* ---- attributes ---- */

static tf_status bad_attr(tfp_run *r, const tfp_op *op, const char *key)
{
    snprintf(r->msg, sizeof r->msg, "%s: attribute \"%s\" is missing or malformed", op->name, key);
    return TF_ERR_VALIDATION;
}

/* An integer list attribute into out (at most max entries). */
static tf_status ints(tfp_run *r, const tfp_op *op, const char *key, int64_t *out, size_t max,
                      size_t *n)
{
    const tfp_attr *a = tfp_attr_get(op, key);
    if (!a || a->kind != TFP_A_INTS || a->n > max)
        return bad_attr(r, op, key);
    memcpy(out, a->ints, a->n * sizeof *out);
    *n = a->n;
    return TF_OK;
}

/* The same as int axes; with `rank_of` non-NULL the list must have its rank. */
static tf_status axes(tfp_run *r, const tfp_op *op, const char *key, int *out, size_t *n,
                      const tf_eager *rank_of)
{
    int64_t v[TF_MAX_RANK];
    tf_status st = ints(r, op, key, v, TF_MAX_RANK, n);
    if (!st && rank_of && *n != tf_tensor_rank(tf_eager_value(rank_of)))
        st = bad_attr(r, op, key);
    for (size_t i = 0; !st && i < *n; i++)
        out[i] = (int)v[i];
    return st;
}

/* A per-axis int64 list of exactly x's rank. */
static tf_status per_axis(tfp_run *r, const tfp_op *op, const char *key, const tf_eager *x,
                          int64_t *out)
{
    size_t n;
    tf_status st = ints(r, op, key, out, TF_MAX_RANK, &n);
    if (!st && n != tf_tensor_rank(tf_eager_value(x)))
        st = bad_attr(r, op, key);
    return st;
}

static tf_status num(tfp_run *r, const tfp_op *op, const char *key, double *out)
{
    const tfp_attr *a = tfp_attr_get(op, key);
    if (!a || a->kind != TFP_A_NUM)
        return bad_attr(r, op, key);
    *out = a->num;
    return TF_OK;
}

static tf_status int_attr(tfp_run *r, const tfp_op *op, const char *key, int *out)
{
    double v;
    tf_status st = num(r, op, key, &v);
    if (!st && (v != floor(v) || fabs(v) > 1e9))
        st = bad_attr(r, op, key);
    if (!st)
        *out = (int)v;
    return st;
}

static const char *str(const tfp_op *op, const char *key)
{
    const tfp_attr *a = tfp_attr_get(op, key);
    return a && a->kind == TFP_A_STR ? a->str : NULL;
}

/* An index list or index tensor attribute as an i64 constant of the run. */
static tf_status index_attr(tfp_run *r, const tfp_op *op, const char *key, tf_eager **out)
{
    const tfp_attr *a = tfp_attr_get(op, key);
    if (a && a->kind == TFP_A_INTS) {
        tfp_data d = {.dtype = TFP_I64, .rank = 1, .shape = {(int64_t)a->n}, .count = a->n};
        double buf[256];
        if (a->n > 256)
            return bad_attr(r, op, key);
        for (size_t i = 0; i < a->n; i++)
            buf[i] = (double)a->ints[i];
        d.data = buf;
        return tfp__constant(r, &d, TFP_DENSE, out);
    }
    if (a && a->kind == TFP_A_TENSOR && a->tensor.dtype == TFP_I64)
        return tfp__constant(r, &a->tensor, TFP_DENSE, out);
    return bad_attr(r, op, key);
}

/* ---- the ops ---- */

#define OP_FN(name)                                                                        \
    static tf_status op_##name(tfp_run *r, const tfp_op *op, tf_eager *const *a, size_t n, \
                               tf_eager **out)

typedef tf_status (*reduce_fn)(tf_session *, tf_eager *, const int *, size_t, tf_eager **);

/* attrs.axes: null -> all axes, [] -> identity. */
static tf_status reduce(tfp_run *r, const tfp_op *op, tf_eager *x, reduce_fn fn, tf_eager **out)
{
    const tfp_attr *ax = tfp_attr_get(op, "axes");
    if (ax && ax->kind == TFP_A_NULL)
        return fn(r->s, x, NULL, 0, out);
    int list[TF_MAX_RANK];
    size_t k;
    tf_status st = axes(r, op, "axes", list, &k, NULL);
    return st ? st : fn(r->s, x, list, k, out);
}

#define REDUCE_OP_(name, fn)                 \
    OP_FN(name)                              \
    {                                        \
        return reduce(r, op, a[0], fn, out); \
    }
REDUCE_OP_(reduce_sum, tf_session_reduce_sum)
REDUCE_OP_(reduce_prod, tf_session_reduce_prod)
REDUCE_OP_(reduce_max, tf_session_reduce_max)
REDUCE_OP_(reduce_min, tf_session_reduce_min)
REDUCE_OP_(reduce_mean, tf_session_reduce_mean)
REDUCE_OP_(reduce_sum_squares, tf_session_reduce_sum_squares)
REDUCE_OP_(logsumexp, tf_session_logsumexp)
#undef REDUCE_OP_

OP_FN(softmax)
{
    int axis;
    tf_status st = int_attr(r, op, "axis", &axis);
    if (st)
        return st;
    return strcmp(op->name, "softmax") == 0 ? tf_session_softmax(r->s, a[0], axis, out)
                                            : tf_session_log_softmax(r->s, a[0], axis, out);
}

/* OPS.md's output order [lhs free, rhs free, batch in lhs_batch order] is tenferro's. */
OP_FN(dot_general)
{
    tf_dot_dims d;
    size_t nlc, nrc, nlb, nrb;
    memset(&d, 0, sizeof d);
    tf_status st = axes(r, op, "lhs_contracting", d.lhs_contracting, &nlc, NULL);
    if (!st)
        st = axes(r, op, "rhs_contracting", d.rhs_contracting, &nrc, NULL);
    if (!st)
        st = axes(r, op, "lhs_batch", d.lhs_batch, &nlb, NULL);
    if (!st)
        st = axes(r, op, "rhs_batch", d.rhs_batch, &nrb, NULL);
    if (!st && (nlc != nrc || nlb != nrb))
        st = bad_attr(r, op, "rhs_batch");
    if (st)
        return st;
    d.n_contracting = nlc;
    d.n_batch = nlb;
    return tf_session_dot_general(r->s, a[0], a[1], &d, out);
}

OP_FN(reshape)
{
    int64_t shape[TF_MAX_RANK];
    size_t rank;
    tf_status st = ints(r, op, "shape", shape, TF_MAX_RANK, &rank);
    return st ? st : tf_session_reshape(r->s, a[0], rank, shape, out);
}

OP_FN(transpose)
{
    int perm[TF_MAX_RANK];
    size_t k;
    tf_status st = axes(r, op, "perm", perm, &k, a[0]);
    return st ? st : tf_session_transpose(r->s, a[0], perm, out);
}

OP_FN(broadcast_in_dim)
{
    int64_t shape[TF_MAX_RANK];
    int dims[TF_MAX_RANK];
    size_t rank, k;
    tf_status st = ints(r, op, "shape", shape, TF_MAX_RANK, &rank);
    if (!st)
        st = axes(r, op, "dims", dims, &k, a[0]);
    return st ? st : tf_session_broadcast_in_dim(r->s, a[0], rank, shape, dims, out);
}

OP_FN(reverse)
{
    int list[TF_MAX_RANK];
    size_t k;
    tf_status st = axes(r, op, "axes", list, &k, NULL);
    return st ? st : tf_session_reverse(r->s, a[0], list, k, out);
}

OP_FN(slice)
{
    int64_t start[TF_MAX_RANK], limit[TF_MAX_RANK], stride[TF_MAX_RANK];
    tf_status st = per_axis(r, op, "start", a[0], start);
    if (!st)
        st = per_axis(r, op, "limit", a[0], limit);
    if (!st)
        st = per_axis(r, op, "stride", a[0], stride);
    return st ? st : tf_session_slice(r->s, a[0], start, limit, stride, out);
}

OP_FN(pad)
{
    int64_t low[TF_MAX_RANK], high[TF_MAX_RANK], interior[TF_MAX_RANK];
    double value;
    tf_status st = num(r, op, "value", &value);
    if (!st)
        st = per_axis(r, op, "low", a[0], low);
    if (!st)
        st = per_axis(r, op, "high", a[0], high);
    if (!st)
        st = per_axis(r, op, "interior", a[0], interior);
    return st ? st : tf_session_pad(r->s, a[0], low, high, interior, value, out);
}

OP_FN(concatenate)
{
    int axis;
    tf_status st = int_attr(r, op, "axis", &axis);
    if (st)
        return st;
    return strcmp(op->name, "stack") == 0 ? tf_session_stack(r->s, a, n, axis, out)
                                          : tf_session_concatenate(r->s, a, n, axis, out);
}

/* index_select and take_along_axis (and gather, with attrs.mode). */
OP_FN(gather)
{
    int axis;
    tf_eager *index = NULL;
    tf_status st = int_attr(r, op, "axis", &axis);
    if (!st)
        st = index_attr(r, op, "indices", &index);
    if (st)
        return st;
    const char *mode = str(op, "mode");
    bool along =
        strcmp(op->name, "take_along_axis") == 0 || (mode && strcmp(mode, "along_axis") == 0);
    st = tf_session_gather(r->s, a[0], axis, index,
                           along ? TF_GATHER_ALONG_AXIS : TF_GATHER_INDEX_SELECT, out);
    tf_eager_release(index);
    return st;
}

OP_FN(scatter)
{
    int axis;
    tf_eager *index = NULL;
    const char *mode = str(op, "mode"), *combine = str(op, "combine");
    if (!mode || (strcmp(mode, "index_select") && strcmp(mode, "along_axis")))
        return bad_attr(r, op, "mode");
    if (!combine || (strcmp(combine, "add") && strcmp(combine, "replace")))
        return bad_attr(r, op, "combine");
    tf_status st = int_attr(r, op, "axis", &axis);
    if (!st)
        st = index_attr(r, op, "indices", &index);
    if (st)
        return st;
    st = tf_session_scatter(r->s, a[0], axis, index, a[1],
                            strcmp(mode, "along_axis") ? TF_GATHER_INDEX_SELECT
                                                       : TF_GATHER_ALONG_AXIS,
                            strcmp(combine, "add") ? TF_SCATTER_REPLACE : TF_SCATTER_ADD, out);
    tf_eager_release(index);
    return st;
}

OP_FN(dynamic_slice)
{
    int64_t sizes[TF_MAX_RANK];
    tf_eager *starts = NULL;
    tf_status st = per_axis(r, op, "sizes", a[0], sizes);
    if (!st)
        st = index_attr(r, op, "starts", &starts);
    if (st)
        return st;
    st = tf_session_dynamic_slice(r->s, a[0], starts, sizes, out);
    tf_eager_release(starts);
    return st;
}

OP_FN(compare)
{
    static const struct {
        const char *name;
        tf_compare_op op;
    } dirs[] = {{"lt", TF_COMPARE_LT}, {"gt", TF_COMPARE_GT}, {"le", TF_COMPARE_LE},
                {"ge", TF_COMPARE_GE}, {"eq", TF_COMPARE_EQ}, {"ne", TF_COMPARE_NE}};
    const char *dir = str(op, "direction");
    for (size_t i = 0; dir && i < sizeof dirs / sizeof dirs[0]; i++)
        if (strcmp(dir, dirs[i].name) == 0)
            return tf_session_compare(r->s, a[0], a[1], dirs[i].op, out);
    return bad_attr(r, op, "direction");
}

OP_FN(select)
{
    return tf_session_select(r->s, a[0], a[1], a[2], out);
}

/* clamp with number bounds (format 2) as rank-0 constants of the replay's dtype. */
OP_FN(clamp)
{
    double lo, hi;
    tf_eager *l = NULL, *h = NULL;
    tf_status st = num(r, op, "min", &lo);
    if (!st)
        st = num(r, op, "max", &hi);
    if (!st)
        st = tf_session_scalar(r->s, r->cfg.dtype, lo, &l);
    if (!st)
        st = tf_session_scalar(r->s, r->cfg.dtype, hi, &h);
    if (!st)
        st = tf_session_clamp(r->s, a[0], l, h, out);
    tf_eager_release(l);
    tf_eager_release(h);
    return st;
}

OP_FN(triangle)
{
    double k;
    tf_status st = num(r, op, "k", &k);
    if (st)
        return st;
    return strcmp(op->name, "tril") == 0 ? tf_session_tril(r->s, a[0], (int64_t)k, out)
                                         : tf_session_triu(r->s, a[0], (int64_t)k, out);
}

OP_FN(diagonal)
{
    return strcmp(op->name, "diagonal") == 0 ? tf_session_diagonal(r->s, a[0], out)
                                             : tf_session_diag_embed(r->s, a[0], out);
}

OP_FN(norm)
{
    double eps;
    int m;
    tf_status st = num(r, op, "eps", &eps);
    if (!st)
        st = int_attr(r, op, "n_axes", &m);
    if (st)
        return st;
    if (strcmp(op->name, "layer_norm") == 0)
        return tf_session_layer_norm(r->s, a[0], (size_t)m, n > 1 ? a[1] : NULL,
                                     n > 2 ? a[2] : NULL, eps, out);
    return tf_session_rms_norm(r->s, a[0], (size_t)m, n > 1 ? a[1] : NULL, eps, out);
}

/* cast_round: a cast to attrs.via (f32) and back, the lossy pair of the surface. */
OP_FN(cast_round)
{
    const char *via = str(op, "via");
    if (!via || strcmp(via, "f32"))
        return bad_attr(r, op, "via");
    tf_eager *t = NULL;
    tf_status st = tf_session_cast(r->s, a[0], TF_F32, &t);
    if (!st)
        st = tf_session_convert(r->s, t, tf_tensor_dtype(tf_eager_value(a[0])), out);
    tf_eager_release(t);
    return st;
}

/* ---- linear algebra (tenferro.linalg) ---- */

/* Calls tenferro.linalg.<name> and keeps output `want` of n_out. */
static tf_status linalg(tfp_run *r, const char *name, const tf_call_arg *args, size_t n_args,
                        size_t n_out, size_t want, tf_eager **out)
{
    char full[64];
    tf_eager *outs[3] = {NULL, NULL, NULL};
    snprintf(full, sizeof full, "tenferro.linalg.%s", name);
    tf_status st = tf_session_call(r->s, full, args, n_args, outs, n_out);
    for (size_t i = 0; i < n_out; i++) {
        if (i == want && !st)
            *out = outs[i];
        else
            tf_eager_release(outs[i]);
    }
    return st;
}

OP_FN(linalg1)
{
    tf_call_arg args[] = {TF_ARG_TENSOR(a[0]), TF_ARG_TENSOR(n > 1 ? a[1] : NULL)};
    bool two = strcmp(op->name, "solve") == 0 || strcmp(op->name, "lstsq") == 0;
    size_t nout = strcmp(op->name, "slogdet") == 0 ? 2 : 1;
    return linalg(r, op->name, args, two ? 2 : 1, nout, nout - 1, out);
}

OP_FN(triangular_solve)
{
    double lower;
    tf_status st = num(r, op, "lower", &lower);
    if (st)
        return st;
    tf_call_arg args[] = {TF_ARG_TENSOR(a[0]), TF_ARG_TENSOR(a[1]), TF_ARG_I64((int64_t)lower)};
    return linalg(r, "triangular_solve", args, 3, 1, 0, out);
}

OP_FN(spectral)
{
    tf_call_arg args[] = {TF_ARG_TENSOR(a[0]), TF_ARG_F64(0.0)};
    if (strcmp(op->name, "eigvalsh") == 0)
        return linalg(r, "eigh", args, 2, 2, 0, out);
    if (strcmp(op->name, "svdvals") == 0)
        return linalg(r, "svd", args, 2, 3, 1, out);
    args[1] = TF_ARG_F64(1e-10); /* pinv's rcond: operands have sigma_max / sigma_min <= 40 */
    return linalg(r, "pinv", args, 2, 1, 0, out);
}

OP_FN(matrix_norm)
{
    const char *ord = str(op, "ord");
    double code = !ord                      ? NAN
                  : strcmp(ord, "fro") == 0 ? 'F'
                  : strcmp(ord, "nuc") == 0 ? 'N'
                  : strcmp(ord, "2") == 0   ? 2.0
                                            : NAN;
    if (isnan(code))
        return bad_attr(r, op, "ord");
    tf_call_arg args[] = {TF_ARG_TENSOR(a[0]), TF_ARG_F64(code)};
    return linalg(r, "norm", args, 2, 1, 0, out);
}

/*
 * The checker's gauge-free views of the factors whose signs a decomposition
 * chooses: the elementwise squares of eigh's eigenvectors (eigh_v2), svd's
 * u and v (svd_u2, svd_v2) and qr's q (qr_q2), each unchanged when a column
 * flips sign, so any correct implementation agrees on them and on their
 * derivatives.
 */
OP_FN(squared_factor)
{
    static const struct {
        const char *name, *linalg;
        size_t n_out, want;
        bool eps;
    } k_factors[] = {{"eigh_v2", "eigh", 2, 1, true},
                     {"svd_u2", "svd", 3, 0, true},
                     {"svd_v2", "svd", 3, 2, true},
                     {"qr_q2", "qr", 2, 0, false}};
    for (size_t i = 0; i < sizeof k_factors / sizeof k_factors[0]; i++) {
        if (strcmp(op->name, k_factors[i].name))
            continue;
        tf_call_arg args[] = {TF_ARG_TENSOR(a[0]), TF_ARG_F64(0.0)};
        tf_eager *v = NULL;
        tf_status st = linalg(r, k_factors[i].linalg, args, k_factors[i].eps ? 2 : 1,
                              k_factors[i].n_out, k_factors[i].want, &v);
        if (!st)
            st = tf_session_mul(r->s, v, v, out);
        tf_eager_release(v);
        return st;
    }
    return bad_attr(r, op, "name");
}

/* R of the thin QR with a real positive diagonal: row i times sign(r_ii),
   for complex conj(sign(r_ii)) = conj(r_ii) / |r_ii| (OPS.md 7.7.6). */
OP_FN(qr_r)
{
    tf_call_arg args[] = {TF_ARG_TENSOR(a[0])};
    tf_eager *rr = NULL, *d = NULL, *sg = NULL, *col = NULL;
    tf_status st = linalg(r, "qr", args, 1, 2, 1, &rr);
    if (!st)
        st = tf_session_diagonal(r->s, rr, &d);
    if (!st)
        st = tf_session_sign(r->s, d, &sg);
    if (!st && tf_dtype_is_complex(tf_tensor_dtype(tf_eager_value(sg)))) {
        tf_eager *phase = sg, *conj = NULL;
        st = tf_session_conj(r->s, phase, &conj);
        tf_eager_release(phase);
        sg = conj;
    }
    if (!st) {
        const tf_tensor *v = tf_eager_value(sg);
        int64_t shape[TF_MAX_RANK];
        size_t rank = tf_tensor_rank(v);
        memcpy(shape, tf_tensor_shape(v), rank * sizeof shape[0]);
        shape[rank] = 1; /* [..., n] -> [..., n, 1]: one factor per row */
        st = tf_session_reshape(r->s, sg, rank + 1, shape, &col);
    }
    if (!st)
        st = tf_session_mul(r->s, rr, col, out);
    tf_eager *all[] = {rr, d, sg, col};
    for (int i = 0; i < 4; i++)
        tf_eager_release(all[i]);
    return st;
}

/* ---- the table ---- */

typedef tf_status (*unary_fn)(tf_session *, tf_eager *, tf_eager **);
typedef tf_status (*binary_fn)(tf_session *, tf_eager *, tf_eager *, tf_eager **);
typedef tf_status (*op_fn)(tfp_run *, const tfp_op *, tf_eager *const *, size_t, tf_eager **);

static const struct {
    const char *name;
    unary_fn fn;
} k_unary[] = {
#define UNARY_ENTRY_(NAME, name) {#name, tf_session_##name},
    TF_UNARY_OPS(UNARY_ENTRY_) TF_COMPLEX_UNARY_OPS(UNARY_ENTRY_)
#undef UNARY_ENTRY_
        {"softplus", tf_session_softplus},
    {"silu", tf_session_silu},
    {"gelu", tf_session_gelu},
};

static const struct {
    const char *name;
    binary_fn fn;
} k_binary[] = {
#define BINARY_ENTRY_(NAME, name) {#name, tf_session_##name},
    TF_BINARY_OPS(BINARY_ENTRY_)
#undef BINARY_ENTRY_
        {"matmul", tf_session_matmul},
    {"complex", tf_session_complex},
};

static const struct {
    const char *name;
    op_fn fn;
    uint8_t min_args, max_args;
    bool linalg;
} k_ops[] = {
    {"reduce_sum", op_reduce_sum, 1, 1, false},
    {"reduce_prod", op_reduce_prod, 1, 1, false},
    {"reduce_max", op_reduce_max, 1, 1, false},
    {"reduce_min", op_reduce_min, 1, 1, false},
    {"reduce_mean", op_reduce_mean, 1, 1, false},
    {"reduce_sum_squares", op_reduce_sum_squares, 1, 1, false},
    {"logsumexp", op_logsumexp, 1, 1, false},
    {"softmax", op_softmax, 1, 1, false},
    {"log_softmax", op_softmax, 1, 1, false},
    {"dot_general", op_dot_general, 2, 2, false},
    {"reshape", op_reshape, 1, 1, false},
    {"transpose", op_transpose, 1, 1, false},
    {"broadcast_in_dim", op_broadcast_in_dim, 1, 1, false},
    {"reverse", op_reverse, 1, 1, false},
    {"slice", op_slice, 1, 1, false},
    {"pad", op_pad, 1, 1, false},
    {"concatenate", op_concatenate, 1, 3, false},
    {"stack", op_concatenate, 1, 3, false},
    {"index_select", op_gather, 1, 1, false},
    {"take_along_axis", op_gather, 1, 1, false},
    {"gather", op_gather, 1, 1, false},
    {"scatter", op_scatter, 2, 2, false},
    {"dynamic_slice", op_dynamic_slice, 1, 1, false},
    {"compare", op_compare, 2, 2, false},
    {"select", op_select, 3, 3, false},
    {"clamp", op_clamp, 1, 1, false},
    {"tril", op_triangle, 1, 1, false},
    {"triu", op_triangle, 1, 1, false},
    {"diagonal", op_diagonal, 1, 1, false},
    {"diag_embed", op_diagonal, 1, 1, false},
    {"layer_norm", op_norm, 1, 3, false},
    {"rms_norm", op_norm, 1, 2, false},
    {"cast_round", op_cast_round, 1, 1, false},
    {"inv", op_linalg1, 1, 1, true},
    {"det", op_linalg1, 1, 1, true},
    {"slogdet", op_linalg1, 1, 1, true},
    {"cholesky", op_linalg1, 1, 1, true},
    {"solve", op_linalg1, 2, 2, true},
    {"lstsq", op_linalg1, 2, 2, true},
    {"triangular_solve", op_triangular_solve, 2, 2, true},
    {"eigvalsh", op_spectral, 1, 1, true},
    {"svdvals", op_spectral, 1, 1, true},
    {"pinv", op_spectral, 1, 1, true},
    {"matrix_norm", op_matrix_norm, 1, 1, true},
    {"qr_r", op_qr_r, 1, 1, true},
    {"eigh_v2", op_squared_factor, 1, 1, true},
    {"svd_u2", op_squared_factor, 1, 1, true},
    {"svd_v2", op_squared_factor, 1, 1, true},
    {"qr_q2", op_squared_factor, 1, 1, true},
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

bool tfp_op_known(const char *name, bool *needs_linalg)
{
    *needs_linalg = false;
    for (size_t i = 0; i < COUNT_OF(k_unary); i++)
        if (strcmp(name, k_unary[i].name) == 0)
            return true;
    for (size_t i = 0; i < COUNT_OF(k_binary); i++)
        if (strcmp(name, k_binary[i].name) == 0)
            return true;
    for (size_t i = 0; i < COUNT_OF(k_ops); i++)
        if (strcmp(name, k_ops[i].name) == 0) {
            *needs_linalg = k_ops[i].linalg;
            return true;
        }
    return false;
}

static tf_status arity(tfp_run *r, const tfp_op *op, size_t lo, size_t hi)
{
    if (op->n_args >= lo && op->n_args <= hi)
        return TF_OK;
    snprintf(r->msg, sizeof r->msg, "%s takes %zu to %zu arguments, found %u", op->name, lo, hi,
             op->n_args);
    return TF_ERR_VALIDATION;
}

tf_status tfp__dispatch(tfp_run *r, const tfp_op *op, tf_eager *const *a, tf_eager **out)
{
    tf_status st;
    for (size_t i = 0; i < COUNT_OF(k_unary); i++)
        if (strcmp(op->name, k_unary[i].name) == 0)
            return (st = arity(r, op, 1, 1)) ? st : k_unary[i].fn(r->s, a[0], out);
    for (size_t i = 0; i < COUNT_OF(k_binary); i++)
        if (strcmp(op->name, k_binary[i].name) == 0)
            return (st = arity(r, op, 2, 2)) ? st : k_binary[i].fn(r->s, a[0], a[1], out);
    for (size_t i = 0; i < COUNT_OF(k_ops); i++)
        if (strcmp(op->name, k_ops[i].name) == 0)
            return (st = arity(r, op, k_ops[i].min_args, k_ops[i].max_args))
                       ? st
                       : k_ops[i].fn(r, op, a, op->n_args, out);
    snprintf(r->msg, sizeof r->msg, "unknown op \"%s\"", op->name);
    return TF_ERR_UNSUPPORTED;
}
