/*
 * tf_gen_build.c - the generator's op builders: one per family of the op
 * surface (elementwise, reductions, contractions, layout, indexing,
 * compare/select, composites, linalg), and the sharing patterns (residual
 * and cancelling paths, x * x + x). Each picks operands among the values so
 * far, makes attributes that fit their shapes, and hands the op to tfg__try,
 * which keeps it only if the library accepts it and its margins hold.
 */
#include <math.h>
#include <string.h>

#include "tf_gen_internal.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char *const k_unary[] = {"neg",  "abs",   "sign",  "exp",   "log",        "expm1",
                                      "log1p", "sin",   "cos",   "tanh",  "sqrt",       "rsqrt",
                                      "erf",  "sigmoid", "softplus", "silu", "gelu",   "cast_round"};
static const char *const k_binary[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                       "rem"};
static const char *const k_reduce[] = {"reduce_sum",  "reduce_prod", "reduce_max",
                                       "reduce_min",  "reduce_mean", "reduce_sum_squares",
                                       "logsumexp"};

/* ---- small helpers ---- */

static bool op1(gen *g, const char *name, uint32_t a, uint32_t *out)
{
    tfp_op op;
    tfp_op_init(&op, name, 1, &a);
    return tfg__try(g, &op, out);
}

static bool op2(gen *g, const char *name, uint32_t a, uint32_t b, uint32_t *out)
{
    uint32_t args[2] = {a, b};
    tfp_op op;
    tfp_op_init(&op, name, 2, args);
    return tfg__try(g, &op, out);
}

static uint32_t rank_of(gen *g, uint32_t id)
{
    return tfg__val(g, id)->rank;
}

static const int64_t *shape_of(gen *g, uint32_t id)
{
    return tfg__val(g, id)->shape;
}

static bool want_rank(gen *g, uint32_t id, const void *ctx)
{
    return rank_of(g, id) >= *(const uint32_t *)ctx;
}

/* A float value of rank >= r. */
static uint32_t pick_rank(gen *g, uint32_t r)
{
    return tfg__pick_value(g, want_rank, &r);
}

static bool want_broadcast(gen *g, uint32_t id, const void *ctx)
{
    uint32_t rank;
    int64_t shape[TF_MAX_RANK];
    return tfg__broadcast(tfg__val(g, id), tfg__val(g, *(const uint32_t *)ctx), &rank, shape) &&
           tfg__numel(rank, shape) <= tfg__value_limit(g);
}

static bool want_shape(gen *g, uint32_t id, const void *ctx)
{
    const tfp_data *a = tfg__val(g, id), *b = tfg__val(g, *(const uint32_t *)ctx);
    return a->rank == b->rank && memcmp(a->shape, b->shape, a->rank * sizeof a->shape[0]) == 0;
}

/* ---- elementwise ---- */

/* x, made positive first (exp) when the op needs x > 0.1 and x is not. */
static uint32_t positive(gen *g, uint32_t x)
{
    const tfp_data *d = tfg__val(g, x);
    double lo = INFINITY;
    for (size_t k = 0; k < d->count; k++)
        lo = fmin(lo, d->data[k]);
    uint32_t e;
    return lo > 0.1 || !op1(g, "exp", x, &e) ? x : e;
}

static void build_unary(gen *g)
{
    const char *name = k_unary[tfg_pick(&g->rng, COUNT_OF(k_unary))];
    uint32_t x = tfg__pick_value(g, NULL, NULL), out;
    if (!strcmp(name, "log") || !strcmp(name, "sqrt") || !strcmp(name, "rsqrt"))
        x = positive(g, x);
    if (strcmp(name, "cast_round") == 0) {
        tfp_op op;
        tfp_op_init(&op, name, 1, &x);
        tfp_attr_str(&op, "via", "f32");
        tfg__try(g, &op, &out);
        return;
    }
    op1(g, name, x, &out);
}

static void build_binary(gen *g)
{
    const char *name = k_binary[tfg_pick(&g->rng, COUNT_OF(k_binary))];
    uint32_t x = tfg__pick_value(g, NULL, NULL), out;
    bool self_ok = !strcmp(name, "add") || !strcmp(name, "mul") || !strcmp(name, "pow");
    uint32_t y = self_ok && tfg__chance(g, 0.2) ? x : tfg__pick_value(g, want_broadcast, &x);
    if (y == UINT32_MAX)
        return;
    if (!strcmp(name, "pow"))
        x = positive(g, x);
    op2(g, name, x, y, &out);
}

/* ---- between real and complex (complex programs) ---- */

static bool want_dtype(gen *g, uint32_t id, const void *ctx)
{
    return tfg__val(g, id)->dtype == *(const tfp_dtype *)ctx;
}

static bool want_real_broadcast(gen *g, uint32_t id, const void *ctx)
{
    return tfg__val(g, id)->dtype == TFP_F64 && want_broadcast(g, id, ctx);
}

/* complex(re, im) of two real values (or one twice), or conj, real, imag, abs or
   angle of a complex one. Mixed real and complex operands of the other ops
   promote (NumPy's rule), so the two dtypes meet there too. */
static void build_complex(gen *g)
{
    static const char *const parts[] = {"conj", "real", "imag", "abs", "angle"};
    static const tfp_dtype real = TFP_F64, cx = TFP_C128;
    uint32_t out;
    if (tfg__chance(g, 0.35)) {
        uint32_t a = tfg__pick_value(g, want_dtype, &real);
        uint32_t b = a == UINT32_MAX || tfg__chance(g, 0.2)
                         ? a
                         : tfg__pick_value(g, want_real_broadcast, &a);
        if (b != UINT32_MAX)
            op2(g, "complex", a, b, &out);
        return;
    }
    uint32_t z = tfg__pick_value(g, want_dtype, &cx);
    if (z != UINT32_MAX)
        op1(g, parts[tfg_pick(&g->rng, COUNT_OF(parts))], z, &out);
}

/* ---- reductions and the softmax family ---- */

/* A random ascending subset of [0, rank) (at least one axis when `nonempty`). */
static size_t axis_subset(gen *g, uint32_t rank, bool nonempty, int64_t *axes)
{
    size_t n;
    do {
        n = 0;
        for (uint32_t i = 0; i < rank; i++)
            if (tfg__chance(g, 0.5))
                axes[n++] = i;
    } while (nonempty && rank && n == 0);
    return n;
}

static void build_reduce(gen *g)
{
    const char *name = k_reduce[tfg_pick(&g->rng, COUNT_OF(k_reduce))];
    uint32_t x = tfg__pick_value(g, NULL, NULL), out;
    tfp_op op;
    tfp_op_init(&op, name, 1, &x);
    double roll = tfg_unif(&g->rng, 0, 1);
    if (roll < 0.35) {
        tfp_attr_null(&op, "axes");
    } else {
        int64_t axes[TF_MAX_RANK];
        size_t n = roll < 0.4 ? 0 : axis_subset(g, rank_of(g, x), true, axes);
        tfp_attr_ints(&op, "axes", axes, n);
    }
    tfg__try(g, &op, &out);
}

static void build_softmax(gen *g)
{
    uint32_t x = pick_rank(g, 1), out;
    if (x == UINT32_MAX)
        return;
    tfp_op op;
    tfp_op_init(&op, tfg__chance(g, 0.5) ? "softmax" : "log_softmax", 1, &x);
    tfp_attr_num(&op, "axis", (double)tfg_pick(&g->rng, rank_of(g, x)));
    tfg__try(g, &op, &out);
}

/* ---- contractions ---- */

static void build_dot(gen *g)
{
    uint32_t a = pick_rank(g, 1), out;
    if (a == UINT32_MAX)
        return;
    uint32_t b = tfg__chance(g, 0.3) ? a : pick_rank(g, 1);
    const int64_t *sa = shape_of(g, a), *sb = shape_of(g, b);
    uint32_t ra = rank_of(g, a), rb = rank_of(g, b);
    if (ra == 2 && rb == 2 && sa[1] == sb[0] && tfg__chance(g, 0.3)) {
        op2(g, "matmul", a, b, &out);
        return;
    }
    int64_t lc[TF_MAX_RANK], rc[TF_MAX_RANK], lb[TF_MAX_RANK], rbt[TF_MAX_RANK];
    size_t nc = 0, nb = 0;
    bool used_a[TF_MAX_RANK] = {false}, used_b[TF_MAX_RANK] = {false};
    uint32_t pairs = tfg_pick(&g->rng, 3);
    for (uint32_t t = 0; t < 12 && nc + nb < pairs; t++) {
        uint32_t i = tfg_pick(&g->rng, ra), j = tfg_pick(&g->rng, rb);
        if (used_a[i] || used_b[j] || sa[i] != sb[j])
            continue;
        used_a[i] = used_b[j] = true;
        if (tfg__chance(g, 0.7)) {
            lc[nc] = i;
            rc[nc++] = j;
        } else {
            lb[nb] = i;
            rbt[nb++] = j;
        }
    }
    if (ra + rb - 2 * nc - nb > TF_MAX_RANK)
        return;
    uint32_t args[2] = {a, b};
    tfp_op op;
    tfp_op_init(&op, "dot_general", 2, args);
    tfp_attr_ints(&op, "lhs_contracting", lc, nc);
    tfp_attr_ints(&op, "rhs_contracting", rc, nc);
    tfp_attr_ints(&op, "lhs_batch", lb, nb);
    tfp_attr_ints(&op, "rhs_batch", rbt, nb);
    tfg__try(g, &op, &out);
}

/* ---- layout ---- */

static void build_reshape(gen *g)
{
    uint32_t x = tfg__pick_value(g, NULL, NULL), out;
    size_t n = tfp_data_numel(tfg__val(g, x));
    int64_t shape[TF_MAX_RANK];
    uint32_t rank = 0;
    /* split n into up to 3 factors, with size-1 axes now and then */
    while (rank < 3 && n > 1) {
        int64_t f = 1;
        for (int64_t d = 2; d <= (int64_t)n; d++)
            if (n % (size_t)d == 0 && tfg__chance(g, 0.5)) {
                f = d;
                break;
            }
        if (f == 1)
            f = (int64_t)n;
        shape[rank++] = f;
        n /= (size_t)f;
        if (rank < 3 && tfg__chance(g, 0.15))
            shape[rank++] = 1;
    }
    if (n > 1)
        shape[rank - 1] *= (int64_t)n;
    tfp_op op;
    tfp_op_init(&op, "reshape", 1, &x);
    tfp_attr_ints(&op, "shape", shape, rank);
    tfg__try(g, &op, &out);
}

static void build_transpose(gen *g)
{
    uint32_t x = pick_rank(g, 2), out;
    if (x == UINT32_MAX)
        return;
    uint32_t r = rank_of(g, x);
    int64_t perm[TF_MAX_RANK];
    for (uint32_t i = 0; i < r; i++)
        perm[i] = i;
    for (uint32_t i = r - 1; i > 0; i--) {
        uint32_t j = tfg_pick(&g->rng, i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    tfp_op op;
    tfp_op_init(&op, "transpose", 1, &x);
    tfp_attr_ints(&op, "perm", perm, r);
    tfg__try(g, &op, &out);
}

static void build_broadcast(gen *g)
{
    uint32_t x = tfg__pick_value(g, NULL, NULL), out;
    uint32_t r = rank_of(g, x), extra = 1 + tfg_pick(&g->rng, 2), orank = r + extra;
    if (orank > 4)
        return;
    int64_t shape[TF_MAX_RANK], dims[TF_MAX_RANK];
    /* x's axes land on an ascending subset of the output's */
    uint32_t placed = 0;
    for (uint32_t o = 0; o < orank; o++) {
        bool take = placed < r && (orank - o == r - placed || tfg__chance(g, 0.5));
        if (take) {
            int64_t e = shape_of(g, x)[placed];
            shape[o] = e == 1 && tfg__chance(g, 0.5) ? 2 : e;
            dims[placed++] = o;
        } else {
            shape[o] = 1 + tfg_pick(&g->rng, 3);
        }
    }
    if (tfg__numel(orank, shape) > tfg__value_limit(g))
        return;
    tfp_op op;
    tfp_op_init(&op, "broadcast_in_dim", 1, &x);
    tfp_attr_ints(&op, "shape", shape, orank);
    tfp_attr_ints(&op, "dims", dims, r);
    tfg__try(g, &op, &out);
}

static void build_reverse(gen *g)
{
    uint32_t x = pick_rank(g, 1), out;
    if (x == UINT32_MAX)
        return;
    int64_t axes[TF_MAX_RANK];
    size_t n = axis_subset(g, rank_of(g, x), true, axes);
    tfp_op op;
    tfp_op_init(&op, "reverse", 1, &x);
    tfp_attr_ints(&op, "axes", axes, n);
    tfg__try(g, &op, &out);
}

static void build_triangle(gen *g)
{
    uint32_t x = pick_rank(g, 2), out;
    if (x == UINT32_MAX)
        return;
    double roll = tfg_unif(&g->rng, 0, 1);
    if (roll < 0.25) {
        op1(g, "diagonal", x, &out);
    } else if (roll < 0.4) {
        op1(g, "diag_embed", x, &out);
    } else {
        tfp_op op;
        tfp_op_init(&op, roll < 0.7 ? "tril" : "triu", 1, &x);
        tfp_attr_num(&op, "k", (double)tfg_pick(&g->rng, 5) - 2);
        tfg__try(g, &op, &out);
    }
}

/* ---- indexing ---- */

static void build_slice(gen *g)
{
    uint32_t x = pick_rank(g, 1), out;
    if (x == UINT32_MAX)
        return;
    uint32_t r = rank_of(g, x);
    int64_t start[TF_MAX_RANK], limit[TF_MAX_RANK], stride[TF_MAX_RANK];
    bool dynamic = tfg__chance(g, 0.3);
    for (uint32_t i = 0; i < r; i++) {
        int64_t d = shape_of(g, x)[i];
        start[i] = tfg_pick(&g->rng, (uint32_t)d);
        limit[i] = start[i] + 1 + tfg_pick(&g->rng, (uint32_t)(d - start[i]));
        stride[i] = 1 + tfg_pick(&g->rng, 2);
        if (dynamic) { /* sizes, and starts that may need clamping */
            limit[i] = 1 + tfg_pick(&g->rng, (uint32_t)d);
            start[i] = tfg_pick(&g->rng, (uint32_t)d + 1);
        }
    }
    tfp_op op;
    tfp_op_init(&op, dynamic ? "dynamic_slice" : "slice", 1, &x);
    if (dynamic) {
        tfp_attr_ints(&op, "starts", start, r);
        tfp_attr_ints(&op, "sizes", limit, r);
    } else {
        tfp_attr_ints(&op, "start", start, r);
        tfp_attr_ints(&op, "limit", limit, r);
        tfp_attr_ints(&op, "stride", stride, r);
    }
    tfg__try(g, &op, &out);
}

static void build_pad(gen *g)
{
    uint32_t x = pick_rank(g, 1), out;
    if (x == UINT32_MAX)
        return;
    uint32_t r = rank_of(g, x);
    int64_t low[TF_MAX_RANK], high[TF_MAX_RANK], interior[TF_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) {
        low[i] = (int64_t)tfg_pick(&g->rng, 3) - (tfg__chance(g, 0.1) ? 1 : 0);
        high[i] = (int64_t)tfg_pick(&g->rng, 3) - (tfg__chance(g, 0.1) ? 1 : 0);
        interior[i] = tfg_pick(&g->rng, 2);
    }
    tfp_op op;
    tfp_op_init(&op, "pad", 1, &x);
    tfp_attr_ints(&op, "low", low, r);
    tfp_attr_ints(&op, "high", high, r);
    tfp_attr_ints(&op, "interior", interior, r);
    tfp_attr_num(&op, "value", tfg__chance(g, 0.7) ? 0.0 : 0.5);
    tfg__try(g, &op, &out);
}

static void build_join(gen *g)
{
    uint32_t x = pick_rank(g, 1), out;
    if (x == UINT32_MAX)
        return;
    bool stack = tfg__chance(g, 0.4);
    uint32_t n = (stack ? 1 : 2) + tfg_pick(&g->rng, 2), args[3];
    for (uint32_t i = 0; i < n; i++)
        args[i] = i == 0 || tfg__chance(g, 0.5) ? x : tfg__pick_value(g, want_shape, &x);
    tfp_op op;
    tfp_op_init(&op, stack ? "stack" : "concatenate", n, args);
    tfp_attr_num(&op, "axis", (double)tfg_pick(&g->rng, rank_of(g, x) + (stack ? 1 : 0)));
    tfg__try(g, &op, &out);
}

/* An i64 index tensor of `shape` with entries in [0, bound). */
static void index_data(gen *g, uint32_t rank, const int64_t *shape, int64_t bound, tfp_data *d)
{
    memset(d, 0, sizeof *d);
    d->dtype = TFP_I64;
    d->rank = rank;
    memcpy(d->shape, shape, rank * sizeof shape[0]);
    d->count = tfg__numel(rank, shape);
    d->data = malloc((d->count ? d->count : 1) * sizeof *d->data);
    for (size_t k = 0; d->data && k < d->count; k++)
        d->data[k] = (double)tfg_pick(&g->rng, (uint32_t)bound);
}

static void build_gather(gen *g)
{
    uint32_t x = pick_rank(g, 1), out;
    if (x == UINT32_MAX)
        return;
    uint32_t r = rank_of(g, x), axis = tfg_pick(&g->rng, r);
    int64_t d = shape_of(g, x)[axis];
    tfp_op op;
    if (tfg__chance(g, 0.5)) {
        int64_t idx[5], m = 1 + tfg_pick(&g->rng, 5);
        for (int64_t i = 0; i < m; i++)
            idx[i] = tfg_pick(&g->rng, (uint32_t)d);
        tfp_op_init(&op, "index_select", 1, &x);
        tfp_attr_num(&op, "axis", axis);
        tfp_attr_ints(&op, "indices", idx, (size_t)m);
    } else {
        int64_t shape[TF_MAX_RANK];
        memcpy(shape, shape_of(g, x), r * sizeof shape[0]);
        shape[axis] = 1 + tfg_pick(&g->rng, 4);
        tfp_data t;
        index_data(g, r, shape, d, &t);
        tfp_op_init(&op, "take_along_axis", 1, &x);
        tfp_attr_num(&op, "axis", axis);
        tfp_attr_tensor(&op, "indices", &t);
    }
    tfg__try(g, &op, &out);
}

/* updates of base's shape except along `axis` (ctx: base, axis). */
typedef struct scatter_ctx {
    uint32_t base, axis;
} scatter_ctx;

static bool want_updates(gen *g, uint32_t id, const void *ctx)
{
    const scatter_ctx *c = ctx;
    const tfp_data *u = tfg__val(g, id), *b = tfg__val(g, c->base);
    if (u->rank != b->rank)
        return false;
    for (uint32_t i = 0; i < u->rank; i++)
        if (i != c->axis && u->shape[i] != b->shape[i])
            return false;
    return true;
}

static void build_scatter(gen *g)
{
    uint32_t base = pick_rank(g, 1), out;
    if (base == UINT32_MAX)
        return;
    scatter_ctx c = {base, tfg_pick(&g->rng, rank_of(g, base))};
    uint32_t u = tfg__chance(g, 0.4) ? base : tfg__pick_value(g, want_updates, &c);
    if (u == UINT32_MAX)
        return;
    bool along = tfg__chance(g, 0.5);
    int64_t bound = shape_of(g, base)[c.axis], m = shape_of(g, u)[c.axis];
    tfp_data t;
    if (along)
        index_data(g, rank_of(g, u), shape_of(g, u), bound, &t);
    else
        index_data(g, 1, &m, bound, &t);
    uint32_t args[2] = {base, u};
    tfp_op op;
    tfp_op_init(&op, "scatter", 2, args);
    tfp_attr_num(&op, "axis", c.axis);
    tfp_attr_str(&op, "mode", along ? "along_axis" : "index_select");
    tfp_attr_str(&op, "combine", tfg__chance(g, 0.8) ? "add" : "replace");
    tfp_attr_tensor(&op, "indices", &t);
    tfg__try(g, &op, &out);
}

/* ---- compare and select, clamp ---- */

static void build_select(gen *g)
{
    uint32_t a = tfg__pick_value(g, NULL, NULL), c, out;
    uint32_t b = tfg__pick_value(g, want_broadcast, &a);
    if (b == UINT32_MAX || b == a)
        return;
    tfp_op op;
    tfp_op_init(&op, "compare", 2, (uint32_t[]){a, b});
    tfp_attr_str(&op, "direction", tfg__chance(g, 0.5) ? "lt" : "gt");
    if (!tfg__try(g, &op, &c))
        return;
    uint32_t x = tfg__chance(g, 0.6) ? a : tfg__pick_value(g, want_broadcast, &c);
    uint32_t y = tfg__chance(g, 0.6) ? b : tfg__pick_value(g, want_broadcast, &c);
    if (x == UINT32_MAX || y == UINT32_MAX)
        return;
    tfp_op_init(&op, "select", 3, (uint32_t[]){c, x, y});
    tfg__try(g, &op, &out);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Bounds in the middle of two wide gaps between x's sorted values. */
static void build_clamp(gen *g)
{
    uint32_t x = tfg__pick_value(g, NULL, NULL), out;
    const tfp_data *d = tfg__val(g, x);
    if (d->count < 2 || d->count > 120)
        return;
    double v[122];
    v[0] = -1e3;
    memcpy(v + 1, d->data, d->count * sizeof v[0]);
    v[d->count + 1] = 1e3;
    qsort(v + 1, d->count, sizeof v[0], cmp_double);
    size_t n = d->count + 2, lo = tfg_pick(&g->rng, (uint32_t)n - 1);
    size_t hi = lo + 1 + tfg_pick(&g->rng, (uint32_t)(n - 1 - lo));
    if (hi >= n)
        return;
    tfp_op op;
    tfp_op_init(&op, "clamp", 1, &x);
    tfp_attr_num(&op, "min", lo == 0 ? v[1] - 0.5 : (v[lo] + v[lo + 1]) / 2);
    tfp_attr_num(&op, "max", hi == n - 1 ? v[n - 2] + 0.5 : (v[hi - 1] + v[hi]) / 2);
    tfg__try(g, &op, &out);
}

/* ---- composites ---- */

static bool want_tail(gen *g, uint32_t id, const void *ctx)
{
    const uint32_t *c = ctx; /* x, m */
    const tfp_data *w = tfg__val(g, id), *x = tfg__val(g, c[0]);
    return w->rank == c[1] &&
           memcmp(w->shape, x->shape + x->rank - c[1], c[1] * sizeof w->shape[0]) == 0;
}

static void build_norm(gen *g)
{
    uint32_t x = pick_rank(g, 1), out;
    if (x == UINT32_MAX)
        return;
    bool layer = tfg__chance(g, 0.6);
    uint32_t r = rank_of(g, x), m = 1 + (r > 1 && tfg__chance(g, 0.4));
    static const double eps[] = {1e-5, 1e-3, 0.1};
    uint32_t args[3] = {x}, n = 1, ctx[2] = {x, m};
    for (uint32_t k = 0; k < (layer ? 2u : 1u) && tfg__chance(g, 0.5); k++) {
        uint32_t w = tfg__pick_value(g, want_tail, ctx);
        if (w == UINT32_MAX)
            break;
        args[n++] = w;
    }
    tfp_op op;
    tfp_op_init(&op, layer ? "layer_norm" : "rms_norm", n, args);
    tfp_attr_num(&op, "n_axes", m);
    tfp_attr_num(&op, "eps", eps[tfg_pick(&g->rng, 3)]);
    tfg__try(g, &op, &out);
}

/* ---- sharing patterns ---- */

static void build_pattern(gen *g)
{
    static const char *const f[] = {"tanh", "sin", "exp", "sigmoid", "neg"};
    uint32_t x = tfg__pick_value(g, NULL, NULL), t1, t2, y, n2;
    double roll = tfg_unif(&g->rng, 0, 1);
    const char *fn = f[tfg_pick(&g->rng, COUNT_OF(f))];
    if (roll < 0.35) { /* residual: y = x o f(x) */
        static const char *const o[] = {"add", "sub", "mul"};
        if (op1(g, fn, x, &t1))
            op2(g, o[tfg_pick(&g->rng, 3)], x, t1, &y);
    } else if (roll < 0.8) { /* cancelling: t2 = t1 + x; y = t1 - t2 (or t2 - t1, t1 + -t2) */
        bool sq = tfg__chance(g, 0.25);
        if (!(sq ? op2(g, "mul", x, x, &t1) : op1(g, fn, x, &t1)))
            return;
        bool swap = tfg__chance(g, 0.3);
        if (!op2(g, "add", swap ? x : t1, swap ? t1 : x, &t2))
            return;
        double r2 = tfg_unif(&g->rng, 0, 1);
        if (r2 < 0.4)
            op2(g, "sub", t1, t2, &y);
        else if (r2 < 0.7)
            op2(g, "sub", t2, t1, &y);
        else if (op1(g, "neg", t2, &n2))
            op2(g, "add", t1, n2, &y);
    } else { /* x * x + x */
        if (op2(g, "mul", x, x, &t1))
            op2(g, "add", t1, x, &y);
    }
}

/* ---- linalg ---- */

/* A square [m, m] value: one, or x x^T from a rank-2 value, plus c * I. */
static uint32_t square(gen *g, bool spd)
{
    uint32_t two = 2, v = tfg__pick_value(g, want_rank, &two), s, a;
    if (v == UINT32_MAX || rank_of(g, v) != 2)
        return UINT32_MAX;
    const int64_t *sh = shape_of(g, v);
    if (spd || sh[0] != sh[1] || tfg__chance(g, 0.5)) {
        uint32_t args[2] = {v, v};
        tfp_op op;
        tfp_op_init(&op, "dot_general", 2, args);
        int64_t one = 1;
        tfp_attr_ints(&op, "lhs_contracting", &one, 1);
        tfp_attr_ints(&op, "rhs_contracting", &one, 1);
        tfp_attr_ints(&op, "lhs_batch", NULL, 0);
        tfp_attr_ints(&op, "rhs_batch", NULL, 0);
        if (!tfg__try(g, &op, &s))
            return UINT32_MAX;
    } else {
        s = v;
    }
    int64_t m = shape_of(g, s)[0];
    if (m < 2 || m > 4 || !g->identity[m])
        return UINT32_MAX;
    return op2(g, "add", s, g->identity[m], &a) ? a : UINT32_MAX;
}

static bool want_rows(gen *g, uint32_t id, const void *ctx)
{
    const tfp_data *b = tfg__val(g, id);
    return b->rank == 2 && b->shape[0] == *(const int64_t *)ctx && b->shape[1] <= 3;
}

/* lstsq(a, b): a tall [m, n] value (m > n), b [m, k]; a's conditioning is its margin. */
static void build_lstsq(gen *g)
{
    uint32_t two = 2, a = tfg__pick_value(g, want_rank, &two), out;
    if (a == UINT32_MAX || rank_of(g, a) != 2 || shape_of(g, a)[0] <= shape_of(g, a)[1])
        return;
    int64_t m = shape_of(g, a)[0];
    uint32_t b = tfg__pick_value(g, want_rows, &m);
    if (b == UINT32_MAX)
        return;
    op2(g, "lstsq", a, b, &out);
}

static void build_linalg(gen *g)
{
    static const char *const ops[] = {"inv",      "det",      "slogdet",  "pinv",    "qr_r",
                                      "svdvals",  "matrix_norm", "solve", "cholesky", "eigvalsh",
                                      "triangular_solve", "lstsq", "eigh_v2", "svd_u2",
                                      "svd_v2",   "qr_q2"};
    const char *name = ops[tfg_pick(&g->rng, COUNT_OF(ops))];
    bool spd = !strcmp(name, "cholesky") || !strcmp(name, "triangular_solve");
    if (!strcmp(name, "lstsq")) {
        build_lstsq(g);
        return;
    }
    uint32_t a = square(g, spd), out, t, s;
    if (a == UINT32_MAX)
        return;
    tfp_op op;
    if (!strcmp(name, "eigvalsh") || !strcmp(name, "eigh_v2")) { /* symmetric: a + a^T */
        tfp_op_init(&op, "transpose", 1, &a);
        tfp_attr_ints(&op, "perm", (int64_t[]){1, 0}, 2);
        if (!tfg__try(g, &op, &t) || !op2(g, "add", a, t, &s))
            return;
        a = s;
    }
    if (!strcmp(name, "solve") || !strcmp(name, "triangular_solve")) {
        int64_t m = shape_of(g, a)[0];
        uint32_t b = tfg__pick_value(g, want_rows, &m), l = a;
        if (b == UINT32_MAX || (spd && !op1(g, "cholesky", a, &l)))
            return;
        tfp_op_init(&op, name, 2, (uint32_t[]){l, b});
        if (spd)
            tfp_attr_num(&op, "lower", 1);
        tfg__try(g, &op, &out);
        return;
    }
    tfp_op_init(&op, name, 1, &a);
    if (!strcmp(name, "matrix_norm")) {
        static const char *const ord[] = {"fro", "nuc", "2"};
        tfp_attr_str(&op, "ord", ord[tfg_pick(&g->rng, 3)]);
    }
    if (!strcmp(name, "slogdet"))
        tfp_attr_str(&op, "output", "logabsdet");
    tfg__try(g, &op, &out);
}

/* ---- choosing ---- */

void tfg__grow(gen *g)
{
    static const struct {
        void (*fn)(gen *);
        double weight;
        bool small_only;
    } k_builders[] = {
        {build_complex, 14, false}, /* complex programs only */
        {build_unary, 18, false},    {build_binary, 24, false},  {build_reduce, 8, false},
        {build_softmax, 3, false},   {build_dot, 7, true},       {build_reshape, 4, false},
        {build_transpose, 4, false}, {build_broadcast, 4, false}, {build_reverse, 3, false},
        {build_triangle, 4, true},   {build_slice, 5, false},    {build_pad, 3, false},
        {build_join, 4, false},      {build_gather, 4, false},   {build_scatter, 3, false},
        {build_select, 3, false},    {build_clamp, 2, false},    {build_norm, 3, false},
        {build_pattern, 12, false},  {build_linalg, 40, true},
    };
    double total = 0;
#define SKIPPED_(i)                                                        \
    ((k_builders[i].small_only && g->opt->big) ||                          \
     (k_builders[i].fn == build_linalg && !g->opt->linalg) ||              \
     (k_builders[i].fn == build_complex && !g->opt->with_complex))
    for (size_t i = 0; i < COUNT_OF(k_builders); i++)
        if (!SKIPPED_(i))
            total += k_builders[i].weight;
    double roll = tfg_unif(&g->rng, 0, total);
    for (size_t i = 0; i < COUNT_OF(k_builders); i++) {
        if (SKIPPED_(i))
            continue;
        if ((roll -= k_builders[i].weight) < 0) {
            k_builders[i].fn(g);
            return;
        }
    }
#undef SKIPPED_
}
