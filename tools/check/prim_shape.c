/*
 * prim_shape.c - the kit's calls of the primitives whose output shape differs
 * from their inputs': reduce, dot_general, pad, concatenate, gather, scatter,
 * dynamic_slice and dynamic_update_slice. Each case lists its operand shapes
 * and params; layouts rotate through ck_layout like the elementwise rows.
 */
#include <string.h>

#include "prims.h"

static const tf_dtype k_all[CK_N_DTYPES] = {TF_F32, TF_F64, TF_I32, TF_I64,
                                            TF_BOOL, TF_C64, TF_C128};

static int want(const ck_ctx *ctx, tf_dtype d)
{
    return ck_wants_dtype(ctx, d);
}

static void arg(ck_arg *a, tf_dtype dt, size_t rank, const int64_t *shape, int layout, int domain,
                int64_t lim)
{
    memset(a, 0, sizeof *a);
    a->dtype = dt;
    a->rank = rank;
    memcpy(a->shape, shape, rank * sizeof *shape);
    a->layout = layout % CK_L_COUNT_;
    a->domain = domain;
    a->lim = lim;
}

typedef struct shp {
    size_t rank;
    int64_t d[4];
} shp;

/* ---- reduce ---- */

static void rows_reduce(ck_ctx *ctx)
{
    static const struct {
        shp s;
        uint64_t mask;
    } cases[] = {
        {{2, {3, 4}}, 1},    {{1, {7}}, 1},      {{0, {0}}, 0},           {{3, {2, 3, 4}}, 5},
        {{1, {0}}, 1},       {{2, {300, 2}}, 1}, {{4, {2, 1, 3, 2}}, 15}, {{2, {3, 4}}, 0},
        {{3, {2, 0, 3}}, 2}, {{2, {5, 6}}, 2},
    };
    int n = ctx->quick ? 6 : (int)(sizeof cases / sizeof cases[0]);
    for (uint32_t op = 0; op < TF_REDUCE_COUNT_; op++) {
        ck_row *row = ck_row_add(ctx, "reduce/%s", tf_prim_op_name(TF_PRIM_REDUCE, op));
        for (int d = 0; row && d < CK_N_DTYPES; d++) {
            tf_dtype dt = k_all[d];
            if (!want(ctx, dt) || (dt == TF_BOOL && op < TF_REDUCE_MAX) ||
                (tf_dtype_is_complex(dt) && op >= TF_REDUCE_MAX))
                continue; /* complex: SUM and PROD only (no order) */
            for (int i = 0; i < n; i++) {
                tf_reduce_params p = {sizeof p, op, cases[i].mask};
                ck_case c = {.prim = TF_PRIM_REDUCE, .op = op, .params = &p, .n_in = 1};
                /* complex products: parts in (-0.9, 0.9), moduli below 1.3, so that 300
                   factors stay finite */
                int dom = op == TF_REDUCE_PROD && tf_dtype_is_complex(dt) ? CK_D_UNIT
                          : op == TF_REDUCE_PROD                         ? CK_D_NEAR1
                          : op == TF_REDUCE_SUM ? CK_D_ANY
                                                : CK_D_NANZ;
                c.zero_sign = op == TF_REDUCE_MAX || op == TF_REDUCE_MIN;
                arg(&c.in[0], dt, cases[i].s.rank, cases[i].s.d, i, dom, 0);
                int64_t oshape[4], group = 1;
                for (size_t a = 0; a < cases[i].s.rank; a++) {
                    int red = (cases[i].mask >> a) & 1u;
                    oshape[a] = red ? 1 : cases[i].s.d[a];
                    group *= red ? cases[i].s.d[a] : 1;
                }
                arg(&c.out, dt, cases[i].s.rank, oshape, i % 2 ? CK_L_OFFSET : CK_L_DENSE, CK_D_ANY,
                    0);
                ck_case_tol(&c, dt, c.zero_sign ? CK_TOL_EXACT : CK_TOL_ARITH, group);
                ck_case_run(ctx, row, dt, &c);
            }
        }
    }
}

/* ---- dot_general ---- */

typedef struct dot_case {
    shp l, r, o;
    uint32_t nc, nb;
    uint32_t lc[2], rc[2], lb[2], rb[2];
    int64_t k; /* summands per output element */
} dot_case;

/*
 * Batch axes come in pairs (lhs_batch[i], rhs_batch[i]) and give the output's
 * last axes in lhs_batch's order: the cases with two pairs list them in an
 * order other than the axes', with equal extents (a swap gives wrong values,
 * not a shape error) and with different ones.
 */
static void rows_dot(ck_ctx *ctx)
{
    static const dot_case cases[] = {
        {{2, {3, 4}}, {2, {4, 5}}, {2, {3, 5}}, 1, 0, {1}, {0}, {0}, {0}, 4},
        {{1, {6}}, {1, {6}}, {0, {0}}, 1, 0, {0}, {0}, {0}, {0}, 6},
        {{1, {3}}, {1, {4}}, {2, {3, 4}}, 0, 0, {0}, {0}, {0}, {0}, 1},
        {{3, {3, 4, 2}}, {3, {4, 5, 2}}, {3, {3, 5, 2}}, 1, 1, {1}, {0}, {2}, {2}, 4},
        {{4, {2, 3, 4, 2}},
         {4, {2, 4, 5, 2}},
         {4, {3, 5, 2, 2}},
         1,
         2,
         {2},
         {1},
         {3, 0},
         {0, 3},
         4},
        {{3, {2, 3, 4}}, {3, {3, 2, 5}}, {2, {4, 5}}, 2, 0, {0, 1}, {1, 0}, {0}, {0}, 6},
        {{4, {2, 3, 4, 5}},
         {4, {5, 4, 2, 3}},
         {4, {3, 3, 2, 5}},
         1,
         2,
         {2},
         {1},
         {0, 3},
         {2, 0},
         4},
        {{2, {3, 2}}, {2, {2, 3}}, {2, {3, 2}}, 0, 2, {0}, {0}, {0, 1}, {1, 0}, 1},
        {{2, {3, 0}}, {2, {0, 2}}, {2, {3, 2}}, 1, 0, {1}, {0}, {0}, {0}, 1},
        {{2, {4, 3}}, {2, {5, 4}}, {2, {3, 5}}, 1, 0, {0}, {1}, {0}, {0}, 4},
        {{2, {33, 17}}, {2, {17, 9}}, {2, {33, 9}}, 1, 0, {1}, {0}, {0}, {0}, 17},
    };
    int n = ctx->quick ? 6 : (int)(sizeof cases / sizeof cases[0]);
    ck_row *row = ck_row_add(ctx, "dot_general");
    for (int d = 0; row && d < CK_N_DTYPES; d++) {
        tf_dtype dt = k_all[d];
        if (!want(ctx, dt) || dt == TF_BOOL)
            continue;
        for (int i = 0; i < n; i++) {
            const dot_case *q = &cases[i];
            tf_dot_general_params p;
            memset(&p, 0, sizeof p);
            p.struct_size = sizeof p;
            p.n_contracting = q->nc;
            p.n_batch = q->nb;
            memcpy(p.lhs_contracting, q->lc, sizeof q->lc);
            memcpy(p.rhs_contracting, q->rc, sizeof q->rc);
            memcpy(p.lhs_batch, q->lb, sizeof q->lb);
            memcpy(p.rhs_batch, q->rb, sizeof q->rb);
            /* complex: the cases take turns with no conjugation, lhs's, rhs's and both's */
            if (tf_dtype_is_complex(dt))
                p.conjugate = (uint32_t)(i + (int)dt) % 4u;
            ck_case c = {.prim = TF_PRIM_DOT_GENERAL, .params = &p, .n_in = 2};
            arg(&c.in[0], dt, q->l.rank, q->l.d, i, CK_D_SMALL, 0);
            arg(&c.in[1], dt, q->r.rank, q->r.d, i + 2, CK_D_SMALL, 0);
            arg(&c.out, dt, q->o.rank, q->o.d, i % 2 ? CK_L_OFFSET : CK_L_DENSE, CK_D_ANY, 0);
            ck_case_tol(&c, dt, CK_TOL_ARITH, q->k);
            ck_case_run(ctx, row, dt, &c);
        }
    }
}

/* ---- pad, concatenate ---- */

static void rows_pad(ck_ctx *ctx)
{
    static const struct {
        shp in;
        int64_t low[3], interior[3], high[3];
    } cases[] = {
        {{1, {5}}, {2}, {0}, {1}},
        {{1, {5}}, {-1}, {1}, {0}},
        {{2, {3, 4}}, {1, -1}, {0, 2}, {2, 0}},
        {{1, {0}}, {2}, {0}, {1}},
        {{0, {0}}, {0}, {0}, {0}},
        {{3, {2, 3, 2}}, {0, 1, -1}, {1, 0, 0}, {1, 1, 0}},
        {{2, {4, 3}}, {-2, 0}, {1, 1}, {-1, -2}},
        /* attributes at the int64 extremes (issue 19): nothing may overflow */
        {{1, {1}}, {0}, {INT64_MAX}, {0}},
        {{1, {2}}, {-(INT64_MAX - 1)}, {INT64_MAX - 2}, {0}},
        {{1, {3}}, {INT64_MIN}, {0}, {INT64_MAX}},
        {{1, {1}}, {INT64_MAX - 5}, {0}, {-(INT64_MAX - 5)}},
        {{2, {2, 3}}, {0, -(INT64_MAX - 5)}, {INT64_MAX - 2, 0}, {-(INT64_MAX - 1), INT64_MAX - 5}},
    };
    ck_row *row = ck_row_add(ctx, "pad");
    for (int d = 0; row && d < CK_N_DTYPES; d++) {
        tf_dtype dt = k_all[d];
        if (!want(ctx, dt))
            continue;
        for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
            tf_pad_params p;
            memset(&p, 0, sizeof p);
            p.struct_size = sizeof p;
            p.value.f = 7.5;
            p.value.i = dt == TF_BOOL ? 1 : -2;
            p.imag = tf_dtype_is_complex(dt) ? -1.25 : 0.0; /* the pad value's imaginary part */
            int64_t oshape[3];
            size_t r = cases[i].in.rank;
            for (size_t a = 0; a < r; a++) {
                int64_t e = cases[i].in.d[a];
                p.low[a] = cases[i].low[a];
                p.interior[a] = cases[i].interior[a];
                oshape[a] = p.low[a] + e + (e > 0 ? (e - 1) * p.interior[a] : 0) + cases[i].high[a];
            }
            ck_case c = {.prim = TF_PRIM_PAD, .params = &p, .n_in = 1, .zero_sign = 1};
            arg(&c.in[0], dt, r, cases[i].in.d, i, CK_D_ZEROS, 0);
            arg(&c.out, dt, r, oshape, i % 2 ? CK_L_OFFSET : CK_L_DENSE, CK_D_ANY, 0);
            ck_case_tol(&c, dt, CK_TOL_EXACT, 1);
            ck_case_run(ctx, row, dt, &c);
        }
    }
}

static void rows_concat(ck_ctx *ctx)
{
    static const struct {
        size_t n, rank;
        uint32_t axis;
        int64_t s[3][3];
    } cases[] = {
        {2, 2, 0, {{2, 3}, {4, 3}}},       {3, 2, 1, {{3, 2}, {3, 0}, {3, 4}}}, {1, 1, 0, {{5}}},
        {2, 3, 2, {{2, 2, 1}, {2, 2, 3}}}, {3, 1, 0, {{100}, {0}, {77}}},
    };
    ck_row *row = ck_row_add(ctx, "concatenate");
    for (int d = 0; row && d < CK_N_DTYPES; d++) {
        tf_dtype dt = k_all[d];
        if (!want(ctx, dt))
            continue;
        for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
            tf_concatenate_params p = {sizeof p, cases[i].axis};
            ck_case c = {
                .prim = TF_PRIM_CONCATENATE, .params = &p, .n_in = cases[i].n, .zero_sign = 1};
            int64_t oshape[3];
            memcpy(oshape, cases[i].s[0], sizeof oshape);
            for (size_t k = 0; k < cases[i].n; k++) {
                arg(&c.in[k], dt, cases[i].rank, cases[i].s[k], i + (int)k, CK_D_ZEROS, 0);
                if (k)
                    oshape[cases[i].axis] += cases[i].s[k][cases[i].axis];
            }
            arg(&c.out, dt, cases[i].rank, oshape, i % 2 ? CK_L_OFFSET : CK_L_DENSE, CK_D_ANY, 0);
            ck_case_tol(&c, dt, CK_TOL_EXACT, 1);
            ck_case_run(ctx, row, dt, &c);
        }
    }
}

/* ---- gather, scatter ---- */

typedef struct gather_case {
    shp x, index;
    uint32_t axis;
} gather_case;

static const gather_case k_select[] = {
    {{2, {5, 4}}, {1, {7}}, 0},
    {{2, {3, 6}}, {1, {0}}, 1},
    {{1, {4}}, {1, {3}}, 0},
    {{3, {2, 3, 4}}, {1, {6}}, 2},
};
static const gather_case k_along[] = {
    {{2, {5, 4}}, {2, {3, 4}}, 0},
    {{2, {3, 6}}, {2, {2, 8}}, 1},
    {{3, {2, 3, 4}}, {3, {2, 5, 3}}, 1},
    {{1, {6}}, {1, {0}}, 0},
};

/* The gathered shape: index_select puts len(index) on the axis; along_axis is index's shape. */
static void gathered_shape(const gather_case *g, uint32_t mode, int64_t *out)
{
    if (mode == TF_GATHER_ALONG_AXIS) {
        memcpy(out, g->index.d, g->index.rank * sizeof *out);
        return;
    }
    memcpy(out, g->x.d, g->x.rank * sizeof *out);
    out[g->axis] = g->index.d[0];
}

#define NAME_ENTRY_(NAME, name, value) [value] = #name,
static const char *const k_gather_mode[] = {TF_GATHER_MODE_LIST(NAME_ENTRY_)};
static const char *const k_scatter_combine[] = {TF_SCATTER_COMBINE_LIST(NAME_ENTRY_)};
#undef NAME_ENTRY_

static void rows_gather_scatter(ck_ctx *ctx)
{
    for (int scatter = 0; scatter < 2; scatter++) {
        for (uint32_t mode = 0; mode < 2; mode++) {
            for (uint32_t comb = 0; comb < (scatter ? 2u : 1u); comb++) {
                ck_row *row = scatter ? ck_row_add(ctx, "scatter/%s,%s", k_gather_mode[mode],
                                                   k_scatter_combine[comb])
                                      : ck_row_add(ctx, "gather/%s", k_gather_mode[mode]);
                const gather_case *cases = mode ? k_along : k_select;
                for (int d = 0; row && d < CK_N_DTYPES; d++) {
                    tf_dtype dt = k_all[d];
                    if (!want(ctx, dt) || (scatter && comb == TF_SCATTER_ADD && dt == TF_BOOL))
                        continue; /* scatter-add is not defined for bool */
                    for (int i = 0; i < 4; i++) {
                        for (int v = 0; v < 2; v++) { /* the index dtype: i32, i64 */
                            const gather_case *g = &cases[i];
                            tf_gather_params p = {sizeof p, g->axis, mode, comb};
                            ck_case c = {.prim = scatter ? TF_PRIM_SCATTER : TF_PRIM_GATHER,
                                         .params = &p,
                                         .n_in = scatter ? 3 : 2,
                                         .variant = v,
                                         .zero_sign = !scatter || comb == TF_SCATTER_REPLACE};
                            int64_t gs[4];
                            gathered_shape(g, mode, gs);
                            tf_dtype it = v ? TF_I64 : TF_I32;
                            arg(&c.in[0], dt, g->x.rank, g->x.d, i, CK_D_ZEROS, 0);
                            arg(&c.in[1], it, g->index.rank, g->index.d, i + 1, CK_D_INDEX,
                                g->x.d[g->axis]);
                            if (scatter) {
                                arg(&c.in[2], dt, g->x.rank, gs, i + 2, CK_D_SMALL, 0);
                                arg(&c.out, dt, g->x.rank, g->x.d, i % 2, CK_D_ANY, 0);
                            } else {
                                arg(&c.out, dt, g->x.rank, gs, i % 2, CK_D_ANY, 0);
                            }
                            ck_case_tol(&c, dt, c.zero_sign ? CK_TOL_EXACT : CK_TOL_ARITH, 8);
                            ck_case_run(ctx, row, dt, &c);
                        }
                    }
                }
            }
        }
    }
}

/* ---- dynamic_slice, dynamic_update_slice ---- */

static void rows_dynamic(ck_ctx *ctx)
{
    static const struct {
        shp x, part;
    } cases[] = {
        {{2, {6, 5}}, {2, {3, 2}}}, {{1, {7}}, {1, {0}}},    {{3, {4, 3, 2}}, {3, {2, 3, 1}}},
        {{0, {0}}, {0, {0}}},       {{1, {300}}, {1, {64}}},
    };
    for (int update = 0; update < 2; update++) {
        ck_row *row = ck_row_add(ctx, update ? "dynamic_update_slice" : "dynamic_slice");
        for (int d = 0; row && d < CK_N_DTYPES; d++) {
            tf_dtype dt = k_all[d];
            if (!want(ctx, dt))
                continue;
            for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
                for (int v = 0; v < 2; v++) {
                    tf_prim prim = update ? TF_PRIM_DYNAMIC_UPDATE_SLICE : TF_PRIM_DYNAMIC_SLICE;
                    ck_case c = {
                        .prim = prim, .n_in = update ? 3 : 2, .variant = v, .zero_sign = 1};
                    int64_t nstarts = (int64_t)cases[i].x.rank;
                    ck_arg *starts = &c.in[update ? 2 : 1];
                    arg(&c.in[0], dt, cases[i].x.rank, cases[i].x.d, i, CK_D_ZEROS, 0);
                    arg(starts, v ? TF_I64 : TF_I32, 1, &nstarts, i + 1, CK_D_STARTS,
                        cases[i].x.rank ? cases[i].x.d[0] : 0);
                    if (update) {
                        arg(&c.in[1], dt, cases[i].part.rank, cases[i].part.d, i + 2, CK_D_ZEROS,
                            0);
                        arg(&c.out, dt, cases[i].x.rank, cases[i].x.d, i % 2, CK_D_ANY, 0);
                    } else {
                        arg(&c.out, dt, cases[i].part.rank, cases[i].part.d, i % 2, CK_D_ANY, 0);
                    }
                    ck_case_tol(&c, dt, CK_TOL_EXACT, 1);
                    ck_case_run(ctx, row, dt, &c);
                }
            }
        }
    }
}

void ck_cases_structural(ck_ctx *ctx)
{
    rows_reduce(ctx);
    rows_dot(ctx);
    rows_pad(ctx);
    rows_concat(ctx);
    rows_gather_scatter(ctx);
    rows_dynamic(ctx);
}
