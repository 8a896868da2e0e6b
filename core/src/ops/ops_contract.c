/*
 * ops_contract.c - dot_general (contracting and batch dimensions) and
 * matmul, with their rules.
 *
 * The output axes of dot_general are [lhs free ascending, rhs free
 * ascending, batch in lhs_batch order] (TF_PRIM_DOT_GENERAL). The cotangent
 * of an operand is the output cotangent contracted with the *other* operand
 * over that operand's free axes (with batch axes paired), which yields the
 * operand's axes in the order [free, contracting, batch]; a transpose puts
 * them back in the operand's own order.
 */
#include <string.h>

#include "rule_builder.h"

static const char *const k_lr[] = {"lhs", "rhs"};

/* ---- validation ---- */

/* Normalises one axis list of an operand into out[], marking the axes in *seen. */
static tf_status norm_list(const char *arg, const int *in, size_t n, uint32_t rank, uint64_t *seen,
                           int *out)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t a = 0;
        tf_status st = tf__norm_axis("dot_general", arg, in[i], rank, &a);
        if (st)
            return st;
        if (*seen >> a & 1)
            return tf__error(TF_ERR_VALIDATION, "dot_general", arg,
                             "dot_general: %s lists axis %u, which the operand already uses "
                             "(an axis may appear once in its contracting and batch lists)",
                             arg, a);
        *seen |= 1ull << a;
        out[i] = (int)a;
    }
    return TF_OK;
}

/* The axes of an operand in neither of its lists, ascending; returns their count. */
static size_t free_axes(uint32_t rank, const int *c, const int *b, size_t nc, size_t nb, int *out)
{
    uint64_t used = 0;
    for (size_t i = 0; i < nc; i++)
        used |= 1ull << c[i];
    for (size_t i = 0; i < nb; i++)
        used |= 1ull << b[i];
    size_t n = 0;
    for (uint32_t d = 0; d < rank; d++)
        if (!(used >> d & 1))
            out[n++] = (int)d;
    return n;
}

/* Both operands share a float or integer dtype; `names` name them. */
static tf_status check_dtypes(const char *op, const tf_eager *lhs, const tf_eager *rhs,
                              const char *const *names)
{
    tf_dtype l = lhs->value->dtype, r = rhs->value->dtype;
    if (l != r)
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, names[1], "%s: %s is %s, %s is %s", op,
                         names[0], tf_dtype_name(l), names[1], tf_dtype_name(r));
    if (!tf_dtype_is_inexact(l) && !tf_dtype_is_int(l))
        return tf__error(TF_ERR_DTYPE_MISMATCH, op, names[0],
                         "%s: defined for float, complex and integer dtypes, not %s", op,
                         tf_dtype_name(l));
    return TF_OK;
}

/* Pairs of axes must have equal extents. */
static tf_status check_pairs(const char *what, const tf_tensor *l, const tf_tensor *r,
                             const int *la, const int *ra, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (l->shape[la[i]] != r->shape[ra[i]])
            return tf__error(TF_ERR_SHAPE_MISMATCH, "dot_general", "dims",
                             "dot_general: %s pair %zu: lhs axis %d has extent %lld, rhs axis "
                             "%d has %lld",
                             what, i, la[i], (long long)l->shape[la[i]], ra[i],
                             (long long)r->shape[ra[i]]);
    return TF_OK;
}

/* Validates dims against the operands and writes them with non-negative axes. */
static tf_status normalise_dims(const tf_dot_dims *in, const tf_tensor *l, const tf_tensor *r,
                                tf_dot_dims *d)
{
    memset(d, 0, sizeof *d);
    size_t nc = in->n_contracting, nb = in->n_batch;
    if (nc > l->rank || nb > l->rank - nc || nc > r->rank || nb > r->rank - nc)
        return tf__error(TF_ERR_VALIDATION, "dot_general", "dims",
                         "dot_general: %zu contracting and %zu batch axes do not fit operands "
                         "of rank %u and %u",
                         nc, nb, l->rank, r->rank);
    d->n_contracting = nc;
    d->n_batch = nb;
    uint64_t seen_l = 0, seen_r = 0;
    tf_status st =
        norm_list("lhs_contracting", in->lhs_contracting, nc, l->rank, &seen_l, d->lhs_contracting);
    if (!st)
        st = norm_list("lhs_batch", in->lhs_batch, nb, l->rank, &seen_l, d->lhs_batch);
    if (!st)
        st = norm_list("rhs_contracting", in->rhs_contracting, nc, r->rank, &seen_r,
                       d->rhs_contracting);
    if (!st)
        st = norm_list("rhs_batch", in->rhs_batch, nb, r->rank, &seen_r, d->rhs_batch);
    if (!st)
        st = check_pairs("contracting", l, r, d->lhs_contracting, d->rhs_contracting, nc);
    if (!st)
        st = check_pairs("batch", l, r, d->lhs_batch, d->rhs_batch, nb);
    return st;
}

/* The output shape [lhs free, rhs free, batch]; TF_ERR_RANK_TOO_LARGE past TF_MAX_RANK. */
static tf_status out_shape(const tf_dot_dims *d, const tf_tensor *l, const tf_tensor *r,
                           int64_t *shape, uint32_t *rank)
{
    int lf[TF_MAX_RANK], rf[TF_MAX_RANK];
    size_t nl =
        free_axes(l->rank, d->lhs_contracting, d->lhs_batch, d->n_contracting, d->n_batch, lf);
    size_t nr =
        free_axes(r->rank, d->rhs_contracting, d->rhs_batch, d->n_contracting, d->n_batch, rf);
    if (nl + nr + d->n_batch > TF_MAX_RANK)
        return tf__error(TF_ERR_RANK_TOO_LARGE, "dot_general", "dims",
                         "dot_general: the result would have rank %zu (at most %d)",
                         nl + nr + d->n_batch, TF_MAX_RANK);
    uint32_t n = 0;
    for (size_t i = 0; i < nl; i++)
        shape[n++] = l->shape[lf[i]];
    for (size_t i = 0; i < nr; i++)
        shape[n++] = r->shape[rf[i]];
    for (size_t i = 0; i < d->n_batch; i++)
        shape[n++] = l->shape[d->lhs_batch[i]];
    *rank = n;
    return TF_OK;
}

/* ---- forward ---- */

static tf_status dot_exec(tf_session *s, const tf_dot_dims *d, uint32_t conj, tf_tensor *l,
                          tf_tensor *r, size_t rank, const int64_t *shape, tf_tensor **out)
{
    tf_dot_general_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.conjugate = conj;
    p.n_contracting = (uint32_t)d->n_contracting;
    p.n_batch = (uint32_t)d->n_batch;
    for (size_t i = 0; i < d->n_contracting; i++) {
        p.lhs_contracting[i] = (uint32_t)d->lhs_contracting[i];
        p.rhs_contracting[i] = (uint32_t)d->rhs_contracting[i];
    }
    for (size_t i = 0; i < d->n_batch; i++) {
        p.lhs_batch[i] = (uint32_t)d->lhs_batch[i];
        p.rhs_batch[i] = (uint32_t)d->rhs_batch[i];
    }
    tf_tensor *in[2] = {l, r}, *t;
    tf_status st = tf__empty(s, l->dtype, rank, shape, &t);
    /* a result without elements needs no computing */
    if (!st && t->numel && (st = tf__exec(s, TF_PRIM_DOT_GENERAL, &p, 2, in, t)))
        tf_tensor_release(t);
    if (!st)
        *out = t;
    return st;
}

/*
 * dot_general with the engine's conjugation flags (TF_DOT_CONJ_LHS/RHS; 0 for
 * real dtypes), kept in the node's attrs.i[0]: what the rules below issue, so
 * that B^H enters a product without a pass of its own. The public op is conj 0.
 */
static tf_status dot_general_conj(tf_session *s, tf_eager *lhs, tf_eager *rhs,
                                  const tf_dot_dims *dims, uint32_t conj, tf_eager **out)
{
    tf_eager *xs[2] = {lhs, rhs};
    tf_status st = tf__check_inputs("dot_general", s, xs, 2, k_lr, out);
    if (!st && !dims)
        st = tf__error(TF_ERR_VALIDATION, "dot_general", "dims", "dot_general: dims is NULL");
    if (!st)
        st = check_dtypes("dot_general", lhs, rhs, k_lr);
    tf_attrs a = {0};
    a.i[0] = conj;
    int64_t shape[TF_MAX_RANK];
    uint32_t rank = 0;
    if (!st)
        st = normalise_dims(dims, lhs->value, rhs->value, &a.dot);
    if (!st)
        st = out_shape(&a.dot, lhs->value, rhs->value, shape, &rank);
    tf_tensor *t;
    if (!st)
        st = dot_exec(s, &a.dot, conj, lhs->value, rhs->value, rank, shape, &t);
    if (st)
        return st;
    return tf__record(s, TF_OP_dot_general, &a, xs, 2, t, out);
}

TF_API tf_status tf_session_dot_general(tf_session *s, tf_eager *lhs, tf_eager *rhs,
                                        const tf_dot_dims *dims, tf_eager **out)
{
    return dot_general_conj(s, lhs, rhs, dims, 0, out);
}

TF_API tf_status tf_session_matmul(tf_session *s, tf_eager *x, tf_eager *y, tf_eager **out)
{
    static const char *const names[] = {"x", "y"};
    tf_eager *xs[2] = {x, y};
    tf_status st = tf__check_inputs("matmul", s, xs, 2, names, out);
    if (st)
        return st;
    const tf_tensor *a = x->value, *b = y->value;
    if (a->rank != 2 || b->rank != 2)
        return tf__error(TF_ERR_SHAPE_MISMATCH, "matmul", a->rank != 2 ? "x" : "y",
                         "matmul: needs two matrices, got ranks %u and %u", a->rank, b->rank);
    if (a->shape[1] != b->shape[0])
        return tf__error(TF_ERR_SHAPE_MISMATCH, "matmul", "y",
                         "matmul: [%lld, %lld] x [%lld, %lld]: inner extents differ",
                         (long long)a->shape[0], (long long)a->shape[1], (long long)b->shape[0],
                         (long long)b->shape[1]);
    if ((st = check_dtypes("matmul", x, y, names)))
        return st;
    tf_dot_dims d;
    memset(&d, 0, sizeof d);
    d.n_contracting = 1;
    d.lhs_contracting[0] = 1;
    d.rhs_contracting[0] = 0;
    return tf_session_dot_general(s, x, y, &d, out);
}

/* ---- rules ---- */

/*
 * The cotangent of operand `side` (0: lhs, 1: rhs) contracts the output's
 * cotangent with the other operand over the other's free axes, pairing the
 * batch axes. cot's axes are [lhs free, rhs free, batch]. Two orders give
 * the same numbers:
 *   A = dot_general(cot, other) -> [self free, self contracting (in the
 *       order of the other's paired axes), batch in self-batch order];
 *   B = dot_general(other, cot) -> [self contracting (same order), self
 *       free, batch].
 * Each result axis names an axis of this operand (src); the result is
 * transposed into the operand's order. The order whose result already is in
 * that order is preferred: then the cotangent comes out dense (for matmul,
 * dX = G . W^T through A and dW = X^T . G through B, no copy).
 */
typedef struct cot_plan {
    tf_dot_dims dims;
    int cot_first; /* 1: dot_general(cot, other); 0: dot_general(other, cot) */
    int identity;  /* the transpose is the identity */
    int perm[TF_MAX_RANK];
} cot_plan;

static void plan_perm(cot_plan *p, const int *src, size_t n)
{
    p->identity = 1;
    for (size_t q = 0; q < n; q++) {
        p->perm[src[q]] = (int)q;
        p->identity = p->identity && src[q] == (int)q;
    }
}

static void cot_plan_make(const tf_dot_dims *d, int side, uint32_t self_rank, uint32_t other_rank,
                          int cot_first, cot_plan *p)
{
    const int *sc = side ? d->rhs_contracting : d->lhs_contracting;
    const int *oc = side ? d->lhs_contracting : d->rhs_contracting;
    const int *sb = side ? d->rhs_batch : d->lhs_batch;
    const int *ob = side ? d->lhs_batch : d->rhs_batch;
    size_t nc = d->n_contracting, nb = d->n_batch;
    int sf[TF_MAX_RANK], of[TF_MAX_RANK];
    size_t ns = free_axes(self_rank, sc, sb, nc, nb, sf);
    size_t no = free_axes(other_rank, oc, ob, nc, nb, of);
    size_t other_at = side ? 0 : ns; /* where cot's block of the other's free axes starts */
    memset(p, 0, sizeof *p);
    p->cot_first = cot_first;
    tf_dot_dims *cd = &p->dims;
    int *on_cot_c = cot_first ? cd->lhs_contracting : cd->rhs_contracting;
    int *on_other_c = cot_first ? cd->rhs_contracting : cd->lhs_contracting;
    int *on_cot_b = cot_first ? cd->lhs_batch : cd->rhs_batch;
    int *on_other_b = cot_first ? cd->rhs_batch : cd->lhs_batch;
    cd->n_contracting = no;
    for (size_t i = 0; i < no; i++) {
        on_cot_c[i] = (int)(other_at + i);
        on_other_c[i] = of[i];
    }
    cd->n_batch = nb;
    for (size_t i = 0; i < nb; i++) {
        on_cot_b[i] = (int)(ns + no + i);
        on_other_b[i] = ob[i];
    }
    /* the operand axis each axis of the contraction's result stands for */
    int src[TF_MAX_RANK], contracted[TF_MAX_RANK];
    size_t nk = 0, n = 0;
    for (uint32_t a = 0; a < other_rank; a++)
        for (size_t j = 0; j < nc; j++)
            if (oc[j] == (int)a)
                contracted[nk++] = sc[j];
    if (!cot_first)
        for (size_t i = 0; i < nk; i++)
            src[n++] = contracted[i];
    for (size_t i = 0; i < ns; i++)
        src[n++] = sf[i];
    if (cot_first)
        for (size_t i = 0; i < nk; i++)
            src[n++] = contracted[i];
    for (size_t i = 0; i < nb; i++)
        src[n++] = sb[i];
    plan_perm(p, src, n);
}

/* The plan of one side: order A unless only order B avoids the transpose. */
static void cot_plan_side(const tf_node *nd, int side, cot_plan *p)
{
    uint32_t sr = nd->inputs[side]->value->rank, orank = nd->inputs[1 - side]->value->rank;
    cot_plan_make(&nd->attrs->dot, side, sr, orank, 1, p);
    if (!p->identity) {
        cot_plan b;
        cot_plan_make(&nd->attrs->dot, side, sr, orank, 0, &b);
        if (b.identity)
            *p = b;
    }
}

/* Both sides' plans, prepared once per structure in the AD-transform cache. */
typedef struct dot_vjp_plan {
    cot_plan side[2];
} dot_vjp_plan;

static void plan_dot_vjp(const tf_node *nd, void *out)
{
    dot_vjp_plan *p = out;
    cot_plan_side(nd, 0, &p->side[0]);
    cot_plan_side(nd, 1, &p->side[1]);
}

/* l . r with the conjugation flags conj_l, conj_r (each 0 or 1). */
static tf_eager *rb_dot(rule_builder *b, tf_eager *l, tf_eager *r, const tf_dot_dims *d,
                        unsigned conj_l, unsigned conj_r)
{
    tf_eager *o = NULL;
    if (!l || !r)
        return NULL;
    uint32_t conj = (conj_l ? TF_DOT_CONJ_LHS : 0u) | (conj_r ? TF_DOT_CONJ_RHS : 0u);
    RB_CALL_(b, dot_general_conj(b->s, l, r, d, conj, &o));
}

/* Whether the node's operand `side` (0 lhs, 1 rhs) enters conjugated. */
static unsigned conj_of(const tf_node *nd, int side)
{
    uint32_t c = (uint32_t)nd->attrs->i[0];
    return (c & (side ? TF_DOT_CONJ_RHS : TF_DOT_CONJ_LHS)) != 0;
}

/*
 * PyTorch's convention (docs/complex.md): for out = op(A) . op(B), op the
 * identity or conj, the cotangent of A is cot . op(B)^H when A enters as
 * is (A-bar = cot B^H for a matmul), and conj(cot) . op(B)^T when A enters
 * conjugated (the adjoint of A -> conj(A) B). Both are one product with
 * flags: cot conjugated iff A is, B conjugated iff exactly one of A and B
 * is not. Real dtypes have no flags, and neither is set.
 */
static tf_status dot_vjp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *cot,
                         const bool *need, tf_eager **cin)
{
    dot_vjp_plan plan;
    tf_status st = tf__ad_transform(s, nd, 0, sizeof plan, plan_dot_vjp, &plan);
    if (st)
        return st;
    rule_builder b = rb_begin(s);
    if (need[0] && need[1] && tf__repeat_axis(cot->value) >= 0) {
        /* both products read the cotangent; a broadcast one (the seed of a
           sum, spread over the output) would be packed by a BLAS engine once
           per product: it is made dense once, here */
        cot = rb_reshape(&b, cot, cot->value->rank, cot->value->shape);
    }
    for (int side = 0; side < 2; side++) {
        if (!need[side])
            continue;
        const cot_plan *p = &plan.side[side];
        tf_eager *other = nd->inputs[1 - side];
        unsigned cx = tf_dtype_is_complex(other->value->dtype);
        unsigned c_cot = cx && conj_of(nd, side), c_other = cx && (conj_of(nd, 1 - side) == c_cot);
        tf_eager *r = p->cot_first ? rb_dot(&b, cot, other, &p->dims, c_cot, c_other)
                                   : rb_dot(&b, other, cot, &p->dims, c_other, c_cot);
        rb_set(&b, p->identity ? r : rb_transpose(&b, r, p->perm), &cin[side]);
    }
    return rb_finish(&b);
}

/* Bilinear (conj is real-linear): d(op(l) . op(r)) = op(dl) . op(r) + op(l) . op(dr). */
static tf_status dot_jvp(tf_session *s, tf_eager *out, const tf_node *nd, tf_eager *const *tin,
                         tf_eager **tout)
{
    rule_builder b = rb_begin(s);
    const tf_dot_dims *d = &nd->attrs->dot;
    tf_eager *l = nd->inputs[0], *r = nd->inputs[1];
    unsigned cl = conj_of(nd, 0), cr = conj_of(nd, 1);
    tf_eager *tl = tin[0] ? rb_dot(&b, tin[0], r, d, cl, cr) : NULL;
    tf_eager *tr = tin[1] ? rb_dot(&b, l, tin[1], d, cl, cr) : NULL;
    return rb_done(&b, tl && tr ? rb_add(&b, tl, tr) : tl ? tl : tr, tout);
}

const tf_op_rule tf__rule_dot_general = {.name = "dot_general", .vjp = dot_vjp, .jvp = dot_jvp};
