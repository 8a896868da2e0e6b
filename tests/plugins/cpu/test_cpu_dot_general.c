/*
 * test_cpu_dot_general.c - DOT_GENERAL of the CPU engine against a plain
 * contraction loop: random contracting and batch axis lists in unsorted
 * order, outer products, rank-0 results, zero extents (empty sums), the
 * same tensor as both operands, matrix shapes large enough for BLAS, strided
 * and broadcast operands, and wrapping integer contractions.
 */
#include <math.h>

#include "cpu_fixture.h"

/* A contraction problem: operand shapes, params, and the output layout. */
typedef struct dot_case {
    size_t lrank, rrank, orank;
    int64_t lshape[TF_MAX_RANK], rshape[TF_MAX_RANK], oshape[TF_MAX_RANK];
    tf_dot_general_params p;
    size_t nlf, nrf;
    uint32_t lfree[TF_MAX_RANK], rfree[TF_MAX_RANK]; /* ascending */
} dot_case;

static int in_list(uint32_t axis, const uint32_t *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == axis)
            return 1;
    return 0;
}

/* Derives the free axes and the output shape from shapes and params. */
static void dot_finish(dot_case *c)
{
    const tf_dot_general_params *p = &c->p;
    c->nlf = c->nrf = c->orank = 0;
    for (uint32_t a = 0; a < c->lrank; a++)
        if (!in_list(a, p->lhs_batch, p->n_batch) &&
            !in_list(a, p->lhs_contracting, p->n_contracting))
            c->lfree[c->nlf++] = a;
    for (uint32_t a = 0; a < c->rrank; a++)
        if (!in_list(a, p->rhs_batch, p->n_batch) &&
            !in_list(a, p->rhs_contracting, p->n_contracting))
            c->rfree[c->nrf++] = a;
    for (size_t i = 0; i < c->nlf; i++)
        c->oshape[c->orank++] = c->lshape[c->lfree[i]];
    for (size_t i = 0; i < c->nrf; i++)
        c->oshape[c->orank++] = c->rshape[c->rfree[i]];
    for (size_t i = 0; i < p->n_batch; i++)
        c->oshape[c->orank++] = c->lshape[p->lhs_batch[i]];
}

static int64_t random_extent(tfr_rng *rng, int64_t max)
{
    return tfr_rng_chance(rng, 7) ? 0 : tfr_rng_int(rng, 1, max);
}

/* A random problem: axes of each operand assigned to roles in random order. */
static void dot_random(tfr_rng *rng, dot_case *c)
{
    memset(c, 0, sizeof *c);
    size_t nb = (size_t)tfr_rng_int(rng, 0, 2), nc = (size_t)tfr_rng_int(rng, 0, 2);
    size_t nlf = (size_t)tfr_rng_int(rng, 0, 2), nrf = (size_t)tfr_rng_int(rng, 0, 2);
    int lperm[TF_MAX_RANK], rperm[TF_MAX_RANK];
    c->lrank = nb + nc + nlf;
    c->rrank = nb + nc + nrf;
    tfr_rng_perm(rng, c->lrank, lperm);
    tfr_rng_perm(rng, c->rrank, rperm);
    c->p.struct_size = sizeof c->p;
    c->p.n_batch = (uint32_t)nb;
    c->p.n_contracting = (uint32_t)nc;
    for (size_t i = 0; i < nb; i++) {
        c->p.lhs_batch[i] = (uint32_t)lperm[i];
        c->p.rhs_batch[i] = (uint32_t)rperm[i];
        c->lshape[lperm[i]] = c->rshape[rperm[i]] = random_extent(rng, 3);
    }
    for (size_t i = 0; i < nc; i++) {
        c->p.lhs_contracting[i] = (uint32_t)lperm[nb + i];
        c->p.rhs_contracting[i] = (uint32_t)rperm[nb + i];
        c->lshape[lperm[nb + i]] = c->rshape[rperm[nb + i]] = random_extent(rng, 6);
    }
    for (size_t i = 0; i < nlf; i++)
        c->lshape[lperm[nb + nc + i]] = random_extent(rng, 4);
    for (size_t i = 0; i < nrf; i++)
        c->rshape[rperm[nb + nc + i]] = random_extent(rng, 4);
    dot_finish(c);
}

/* Reference: each output element summed over the contracting indices. */
static void dot_ref(const dot_case *c, tf_dtype dtype, const tf_scalar *lv, const tf_scalar *rv,
                    tf_scalar *want, double *extra)
{
    const tf_dot_general_params *p = &c->p;
    int64_t cshape[TF_MAX_RANK], o[TF_MAX_RANK] = {0};
    for (size_t i = 0; i < p->n_contracting; i++)
        cshape[i] = c->lshape[p->lhs_contracting[i]];
    size_t n_out = tfr_numel(c->orank, c->oshape), n_sum = tfr_numel(p->n_contracting, cshape);
    double u = dtype == TF_F32 ? 0x1p-24 : 0x1p-53;
    for (size_t e = 0; e < n_out; e++, tfr_index_next(c->orank, c->oshape, o)) {
        int64_t li[TF_MAX_RANK] = {0}, ri[TF_MAX_RANK] = {0}, k[TF_MAX_RANK] = {0};
        for (size_t i = 0; i < c->nlf; i++)
            li[c->lfree[i]] = o[i];
        for (size_t i = 0; i < c->nrf; i++)
            ri[c->rfree[i]] = o[c->nlf + i];
        for (size_t i = 0; i < p->n_batch; i++)
            li[p->lhs_batch[i]] = ri[p->rhs_batch[i]] = o[c->nlf + c->nrf + i];
        double sum = 0.0, mag = 0.0;
        uint64_t isum = 0;
        for (size_t s = 0; s < n_sum; s++, tfr_index_next(p->n_contracting, cshape, k)) {
            for (size_t i = 0; i < p->n_contracting; i++)
                li[p->lhs_contracting[i]] = ri[p->rhs_contracting[i]] = k[i];
            tf_scalar a = lv[tfr_index_linear(c->lrank, c->lshape, li)];
            tf_scalar b = rv[tfr_index_linear(c->rrank, c->rshape, ri)];
            sum += a.f * b.f;
            mag += fabs(a.f * b.f);
            isum += (uint64_t)a.i * (uint64_t)b.i;
        }
        want[e] = tf_dtype_is_float(dtype) ? tfr_norm(dtype, tfr_f(sum))
                                           : tfr_norm(dtype, tfr_i((int64_t)isum));
        extra[e] = 3.0 * ((double)n_sum + 2.0) * u * mag;
    }
}

static void dot_describe(const dot_case *c, tf_dtype dtype, char *buf, size_t size)
{
    char l[96], r[96];
    int n = snprintf(buf, size, "dot_general %s lhs %s rhs %s batch(", tf_dtype_name(dtype),
                     tfr_shape_str(c->lrank, c->lshape, l, sizeof l),
                     tfr_shape_str(c->rrank, c->rshape, r, sizeof r));
    for (uint32_t i = 0; i < c->p.n_batch && n > 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, " %u:%u", c->p.lhs_batch[i], c->p.rhs_batch[i]);
    if (n > 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, ") contract(");
    for (uint32_t i = 0; i < c->p.n_contracting && n > 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, " %u:%u", c->p.lhs_contracting[i],
                      c->p.rhs_contracting[i]);
    if (n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ")");
}

/* Runs c with the given operands and checks it against the reference. */
static void dot_check(const dot_case *c, tf_dtype dtype, const tfr_input *lhs, const tfr_input *rhs)
{
    char what[320];
    dot_describe(c, dtype, what, sizeof what);
    tf_tensor *in[2] = {lhs->t, rhs->t};
    tf_tensor *out = tfr_output(cpu_engine, dtype, c->orank, c->oshape);
    tfr_exec_ok(what, cpu_engine, TF_PRIM_DOT_GENERAL, &c->p, 2, in, 1, &out);
    size_t n = tfr_numel(c->orank, c->oshape);
    tf_scalar *got = tfr_read(out), *want = tfr_vals_alloc(n);
    double *extra = calloc(n ? n : 1, sizeof *extra);
    assert_non_null(extra);
    dot_ref(c, dtype, lhs->vals, rhs->vals, want, extra);
    tfr_check(what, dtype, n, got, want, extra, tfr_tol_default(dtype));
    free(got);
    free(want);
    free(extra);
    tf_tensor_release(out);
}

static tfr_gen dot_gen(tf_dtype dtype)
{
    if (tf_dtype_is_float(dtype))
        return (tfr_gen){TFR_UNIFORM, -2.0, 2.0};
    return (tfr_gen){TFR_WIDE, 0, 0}; /* products and sums wrap */
}

static void dot_run(const dot_case *c, tfr_rng *rng, tf_dtype dtype)
{
    tfr_input lhs, rhs;
    tfr_gen g = dot_gen(dtype);
    tfr_input_make(&lhs, rng, cpu_engine, dtype, c->lrank, c->lshape, tfr_random_layout(rng), &g);
    tfr_input_make(&rhs, rng, cpu_engine, dtype, c->rrank, c->rshape, tfr_random_layout(rng), &g);
    dot_check(c, dtype, &lhs, &rhs);
    tfr_input_free(&lhs);
    tfr_input_free(&rhs);
}

static const tf_dtype dot_dtypes[] = {TF_F32, TF_F64, TF_I32, TF_I64};

static void test_dot_random(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 301);
    for (size_t d = 0; d < 4; d++) {
        for (int t = 0; t < 150; t++) {
            dot_case c;
            dot_random(&rng, &c);
            dot_run(&c, &rng, dot_dtypes[d]);
        }
    }
}

/* memcpy that accepts NULL when there is nothing to copy. */
static void copy_n(void *dst, const void *src, size_t bytes)
{
    if (bytes)
        memcpy(dst, src, bytes);
}

/* Builds a case from explicit shapes and axis lists. */
static void dot_make(dot_case *c, size_t lrank, const int64_t *lshape, size_t rrank,
                     const int64_t *rshape, size_t nc, const uint32_t *lc, const uint32_t *rc,
                     size_t nb, const uint32_t *lb, const uint32_t *rb)
{
    memset(c, 0, sizeof *c);
    c->lrank = lrank;
    c->rrank = rrank;
    copy_n(c->lshape, lshape, lrank * sizeof *lshape);
    copy_n(c->rshape, rshape, rrank * sizeof *rshape);
    c->p.struct_size = sizeof c->p;
    c->p.n_contracting = (uint32_t)nc;
    c->p.n_batch = (uint32_t)nb;
    copy_n(c->p.lhs_contracting, lc, nc * sizeof *lc);
    copy_n(c->p.rhs_contracting, rc, nc * sizeof *rc);
    copy_n(c->p.lhs_batch, lb, nb * sizeof *lb);
    copy_n(c->p.rhs_batch, rb, nb * sizeof *rb);
    dot_finish(c);
}

/* Named shapes: matmul both ways, outer product, rank-0, batch axes trailing. */
static void test_dot_shapes(void **state)
{
    (void)state;
    static const uint32_t z[1] = {0}, o[1] = {1}, t[1] = {2}, zo[2] = {0, 1}, oz[2] = {1, 0};
    static const uint32_t zt[2] = {0, 2}, tz[2] = {2, 0};
    tfr_rng rng;
    tfr_rng_seed(&rng, 302);
    for (size_t d = 0; d < 4; d++) {
        dot_case c;
        tf_dtype dt = dot_dtypes[d];
        /* [37,29] x [29,41] -> [37,41] and the transposed forms */
        dot_make(&c, 2, (int64_t[]){37, 29}, 2, (int64_t[]){29, 41}, 1, o, z, 0, NULL, NULL);
        dot_run(&c, &rng, dt);
        dot_make(&c, 2, (int64_t[]){29, 37}, 2, (int64_t[]){41, 29}, 1, z, o, 0, NULL, NULL);
        dot_run(&c, &rng, dt);
        /* outer product: no contracting axes -> [4,3,5,2] */
        dot_make(&c, 2, (int64_t[]){4, 3}, 2, (int64_t[]){5, 2}, 0, NULL, NULL, 0, NULL, NULL);
        dot_run(&c, &rng, dt);
        /* rank-0 result: every axis contracted, pairs in swapped order */
        dot_make(&c, 2, (int64_t[]){6, 7}, 2, (int64_t[]){7, 6}, 2, zo, oz, 0, NULL, NULL);
        dot_run(&c, &rng, dt);
        /* rank-0 operands: scalar times scalar */
        dot_make(&c, 0, NULL, 0, NULL, 0, NULL, NULL, 0, NULL, NULL);
        dot_run(&c, &rng, dt);
        /* batch axes trail the output: lhs [5,3,4] rhs [4,5,2], batch 0:1, contract 2:0 */
        dot_make(&c, 3, (int64_t[]){5, 3, 4}, 3, (int64_t[]){4, 5, 2}, 1, t, z, 1, z, o);
        dot_run(&c, &rng, dt);
        /* two batch axes in non-sorted order: lhs batch (2,0), rhs batch (0,2) */
        dot_make(&c, 4, (int64_t[]){3, 4, 2, 5}, 3, (int64_t[]){2, 5, 3}, 1, (const uint32_t[]){3},
                 o, 2, tz, zt);
        dot_run(&c, &rng, dt);
        /* empty contraction: the sum over nothing is 0 */
        dot_make(&c, 2, (int64_t[]){3, 0}, 2, (int64_t[]){0, 4}, 1, o, z, 0, NULL, NULL);
        dot_run(&c, &rng, dt);
        /* matrix-vector and vector-matrix */
        dot_make(&c, 2, (int64_t[]){33, 17}, 1, (int64_t[]){17}, 1, o, z, 0, NULL, NULL);
        dot_run(&c, &rng, dt);
        dot_make(&c, 1, (int64_t[]){17}, 2, (int64_t[]){17, 33}, 1, z, z, 0, NULL, NULL);
        dot_run(&c, &rng, dt);
    }
}

/* The same tensor as lhs and rhs: x^T x, a batched Gram matrix, a full self-contraction. */
static void test_dot_same_operand(void **state)
{
    (void)state;
    static const uint32_t z[1] = {0}, t[1] = {2}, zo[2] = {0, 1}, oz[2] = {1, 0};
    tfr_rng rng;
    tfr_rng_seed(&rng, 303);
    for (size_t d = 0; d < 4; d++) {
        tf_dtype dt = dot_dtypes[d];
        tfr_gen g = dot_gen(dt);
        for (int layout = 0; layout < TFR_LAYOUT_COUNT_; layout++) {
            dot_case c;
            tfr_input x;
            int64_t mat[2] = {9, 5}, bat[3] = {4, 6, 3};
            tfr_input_make(&x, &rng, cpu_engine, dt, 2, mat, (tfr_layout)layout, &g);
            dot_make(&c, 2, mat, 2, mat, 1, z, z, 0, NULL, NULL); /* x^T x: [5,5] */
            dot_check(&c, dt, &x, &x);
            dot_make(&c, 2, mat, 2, mat, 2, zo, zo, 0, NULL, NULL); /* sum of squares */
            dot_check(&c, dt, &x, &x);
            tfr_input_free(&x);
            if (layout == TFR_UPLOADED_VIEW)
                continue;
            /* a non-symmetric self-pairing: x[i,j] * x[j,i] on a square input */
            int64_t sq[2] = {7, 7};
            tfr_input_make(&x, &rng, cpu_engine, dt, 2, sq, (tfr_layout)layout, &g);
            dot_make(&c, 2, sq, 2, sq, 2, zo, oz, 0, NULL, NULL);
            dot_check(&c, dt, &x, &x);
            tfr_input_free(&x);
            /* batched Gram: x [4,6,3], batch 2, contract 0 -> [6,6,3] */
            tfr_input_make(&x, &rng, cpu_engine, dt, 3, bat, (tfr_layout)layout, &g);
            dot_make(&c, 3, bat, 3, bat, 1, z, z, 1, t, t);
            dot_check(&c, dt, &x, &x);
            tfr_input_free(&x);
        }
    }
}

/* Broadcast (stride 0) operands: a row repeated, and a scalar stretched to a matrix. */
static void test_dot_broadcast_operands(void **state)
{
    (void)state;
    static const uint32_t z[1] = {0}, o[1] = {1};
    tfr_rng rng;
    tfr_rng_seed(&rng, 304);
    for (size_t d = 0; d < 4; d++) {
        tf_dtype dt = dot_dtypes[d];
        tfr_gen g = dot_gen(dt);
        for (int t = 0; t < 4; t++) {
            dot_case c;
            tfr_input lhs, rhs;
            int64_t ls[2] = {13, 11}, rs[2] = {11, 9};
            tfr_input_make(&lhs, &rng, cpu_engine, dt, 2, ls, TFR_BROADCAST, &g);
            tfr_input_make(&rhs, &rng, cpu_engine, dt, 2, rs, TFR_STRIDE0, &g);
            dot_make(&c, 2, ls, 2, rs, 1, o, z, 0, NULL, NULL);
            dot_check(&c, dt, &lhs, &rhs);
            tfr_input_free(&lhs);
            tfr_input_free(&rhs);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dot_random),
        cmocka_unit_test(test_dot_shapes),
        cmocka_unit_test(test_dot_same_operand),
        cmocka_unit_test(test_dot_broadcast_operands),
    };
    return CPU_RUN_GROUPS("cpu dot_general", tests);
}
