/*
 * test_einsum.c - the tenferro.einsum module against its referee (one loop
 * over the index space, test_einsum_ref.c): chosen expressions (traces,
 * diagonals, outer products, ellipses, broadcasting, rank 0, non-ASCII
 * indices, long chains), hundreds of random ones of 1 to 8 operands, every
 * path method giving the same values, strided operands, dtypes, every
 * malformed expression's error (status, argument, byte position, nothing
 * recorded), and the plan cache seen through the runtime's stats.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/einsum.h>

#include "ext_test_util.h"
#include "test_einsum_ref.h"

/* The engine the einsum tests run on: the CPU engine, or (test_other_engine) Vulkan. */
static tf_engine *g_engine;

static int setup(void **state)
{
    if (tft_cpu_setup(state))
        return -1;
    g_engine = g_cpu;
    tf_extension_module *m;
    return tf_extension_load("einsum", &m) == TF_OK ? 0 : -1;
}

static tft_env einsum_env(void)
{
    tft_env e = tft_env_begin();
    TF_ASSERT_OK(tf_einsum_install(e.rt, NULL));
    return e;
}

/* Deterministic data in [-1, 1) for operand t. */
static void fill(double *d, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        d[i] = ((seed >> 8) & 0xffff) / 32768.0 - 1.0;
    }
}

/* An f64 constant of e's runtime in g_engine's memory. */
static tf_eager *operand(tft_env *e, uint32_t rank, const int64_t *shape, const double *d, size_t n)
{
    if (tf_engine_uses_host_memory(g_engine))
        return tft_f64(e->rt, 0, rank, shape, d, n);
    tf_tensor *h = tft_host(TF_F64, rank, shape, d, n);
    tf_eager *x = NULL;
    TF_ASSERT_OK(tf_session_constant_from_host(e->s, h, &x));
    tf_tensor_release(h);
    return x;
}

/* The f64 values of x in host memory (n of them). */
static void read_back(const tf_eager *x, double *out, size_t n)
{
    tf_tensor *v = tf_eager_value(x), *h = NULL;
    if (!tf_tensor_is_host_accessible(v)) {
        TF_ASSERT_OK(tf_engine_download(g_engine, v, &h));
        v = h;
    }
    TF_ASSERT_OK(tf_tensor_copy_to_host(v, TF_F64, out, n));
    tf_tensor_release(h);
}

/* Runs c through the module (optimize `opt`) and the referee; compares. */
static void check_case(tft_env *e, const ref_case *c, uint32_t opt)
{
    double *data[REF_MAX_OPS];
    tf_eager *ops[REF_MAX_OPS];
    for (uint32_t t = 0; t < c->n; t++) {
        size_t n = ref_numel(c->rank[t], c->shape[t]);
        data[t] = malloc((n ? n : 1) * sizeof(double));
        fill(data[t], n, 17u * t + 3u);
        ops[t] = operand(e, c->rank[t], c->shape[t], data[t], n);
    }
    double want[4096], got[4096];
    uint32_t rank;
    int64_t shape[8];
    assert_int_equal(ref_einsum(c, (const double *const *)data, want, 4096, &rank, shape), 0);
    tf_eager *out = NULL;
    tf_einsum_options o = {sizeof o, opt, 0, 0, 0, 0, 0};
    tf_status st = tf_einsum_with(e->s, c->subscripts, c->n, ops, &o, &out);
    if (st)
        fail_msg("'%s': %s: %s (%s)", c->subscripts, tf_status_name(st), tf_error_message(),
                 tf_error_cause());
    tf_tensor *v = tf_eager_value(out);
    if (tf_tensor_rank(v) != rank)
        fail_msg("'%s': rank %zu, NumPy's rule gives %u", c->subscripts, tf_tensor_rank(v), rank);
    for (uint32_t i = 0; i < rank; i++)
        assert_int_equal(tf_tensor_shape(v)[i], shape[i]);
    size_t n = ref_numel(rank, shape);
    read_back(out, got, n);
    for (size_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > 1e-12 * (1 + fabs(want[i])))
            fail_msg("'%s' (optimize %u) element %zu: %.17g, the referee says %.17g", c->subscripts,
                     opt, i, got[i], want[i]);
    tf_eager_release(out);
    for (uint32_t t = 0; t < c->n; t++) {
        tf_eager_release(ops[t]);
        free(data[t]);
    }
}

/* A case from a subscripts string and shapes written "2x3,3x4" ("" rank 0). */
static ref_case make_case(const char *subscripts, const char *shapes)
{
    ref_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.subscripts, sizeof c.subscripts, "%s", subscripts);
    const char *s = shapes;
    for (;;) {
        uint32_t t = c.n++;
        while (*s && *s != ',') {
            char *end;
            c.shape[t][c.rank[t]++] = strtoll(s, &end, 10);
            s = *end == 'x' ? end + 1 : end;
        }
        if (*s != ',')
            break;
        s++;
    }
    return c;
}

static const char *const k_cases[][2] = {
    {"ij,jk->ik", "2x3,3x4"},
    {"ij,jk", "2x3,3x4"},
    {"ii", "3x3"},
    {"ii->i", "3x3"},
    {"iii->i", "2x2x2"},
    {"ij->ji", "2x3"},
    {"ij->", "2x3"},
    {"i,j->ij", "2,3"},
    {"i,i->i", "4,4"},
    {"i,i", "4,4"},
    {",ij->ij", ",2x3"},
    {"->", ""},
    {",", ","},
    {"bij,bjk->bik", "2x2x3,2x3x2"},
    {"ijk,jil->kl", "2x3x2,3x2x4"},
    {"...ij,...jk->...ik", "2x2x3,2x3x2"},
    {"...ij,...jk->...ik", "1x2x3,4x3x2"},
    {"i...,i...", "3x2,3x2"},
    {"...", "2x3"},
    {"i...->...", "2x3"},
    {"ij->ij...", "2x3"},
    {"a...b,b...c->...ac", "2x3x4,4x3x5"},
    {"a...b,b...c->...ac", "2x1x4,4x3x5"},
    {"...ii->...i", "2x3x3"},
    {"ij,jk", "2x1,3x4"}, /* j: 1 broadcasts against 3 */
    {"i,i->i", "1,3"},
    {"ba", "2x3"},
    {"Ba,aB->", "2x3,3x2"},
    {"\xce\xb1\xce\xb2,\xce\xb2\xce\xb3->\xce\xb1\xce\xb3", "2x3,3x2"}, /* αβ,βγ->αγ */
    {"i\xe4\xb8\xad,\xe4\xb8\xadj", "2x3,3x2"},                         /* i中,中j */
    {"ij,jk,kl,lm->im", "2x3,3x4,4x2,2x3"},
    {"ab,bc,cd,de,ef,fg,gh,ha->", "2x2,2x3,3x2,2x2,2x3,3x2,2x2,2x2"},
    {"pi,qj,ijkl,rk,sl->pqrs", "2x3,2x3,3x3x3x3,2x3,2x3"},
    {"ijk,ijk,ijk->", "2x3x2,2x3x2,2x3x2"},
    {"i j , j k -> i k", "2x3,3x4"},
    {"ii,jj", "2x2,3x3"},
    {"ij,ij->j", "2x0,2x0"},
    {"ij,jk->ik", "2x0,0x3"},
};

static void test_chosen_expressions(void **state)
{
    (void)state;
    tft_env e = einsum_env();
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        ref_case c = make_case(k_cases[i][0], k_cases[i][1]);
        for (uint32_t opt = TF_EINSUM_AUTO; opt <= TF_EINSUM_SEARCH; opt++)
            if (opt != TF_EINSUM_SEARCH || i % 8 == 0) /* search spends its budget */
                check_case(&e, &c, opt);
    }
    tft_env_end(&e);
}

static void test_random_expressions(void **state)
{
    (void)state;
    tft_env e = einsum_env();
    unsigned seed = 2024;
    for (int k = 0; k < 600; k++) {
        ref_case c;
        ref_random_case(&seed, 8, &c);
        check_case(&e, &c, k % 4 == 3 ? TF_EINSUM_GREEDY : TF_EINSUM_AUTO);
    }
    tft_env_end(&e);
}

/* ---- dtypes and layouts ---- */

static void test_dtypes(void **state)
{
    (void)state;
    tft_env e = einsum_env();
    const int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    const float af[6] = {1, 2, 3, 4, 5, 6}, bf[6] = {1, 0, 0, 1, 1, 1};
    tf_eager *a = tft_constant(e.rt, TF_F32, 2, s23, af, 6);
    tf_eager *b = tft_constant(e.rt, TF_F32, 2, s32, bf, 6), *ops[2] = {a, b}, *out;
    TF_ASSERT_OK(tf_einsum(e.s, "ij,jk->ik", 2, ops, &out));
    assert_int_equal(tf_tensor_dtype(tf_eager_value(out)), TF_F32);
    float got[4];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(out), TF_F32, got, 4));
    /* a = [[1 3 5] [2 4 6]], b = [[1 1] [0 1] [0 1]] (column-major) */
    const float want[4] = {1, 2, 9, 12};
    for (int i = 0; i < 4; i++)
        assert_true(got[i] == want[i]);
    tf_eager_release(out);
    const int64_t ai[6] = {1, 2, 3, 4, 5, 6};
    tf_eager *c = tft_constant(e.rt, TF_I64, 2, s23, ai, 6), *ic[1] = {c};
    TF_ASSERT_OK(tf_einsum(e.s, "ij->", 1, ic, &out));
    int64_t total;
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(out), TF_I64, &total, 1));
    assert_int_equal(total, 21);
    tf_eager_release(out);
    tf_eager *mixed[2] = {a, c};
    TFT_EXPECT_FAIL(tf_einsum(e.s, "ij,ij->", 2, mixed, &out), TF_ERR_DTYPE_MISMATCH, "operands",
                    out);
    assert_non_null(strstr(tf_error_message(), "operand 1 has dtype i64 and operand 0 dtype f32"));
    const uint8_t bits[6] = {1, 0, 1, 0, 1, 0};
    tf_eager *m = tft_constant(e.rt, TF_BOOL, 2, s23, bits, 6), *mb[1] = {m};
    TFT_EXPECT_FAIL(tf_einsum(e.s, "ij->", 1, mb, &out), TF_ERR_DTYPE_MISMATCH, "operands", out);
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(c);
    tf_eager_release(m);
    tft_env_end(&e);
}

/* Strided operands (a transposed and a reversed view) give the dense result. */
static void test_strided_operands(void **state)
{
    (void)state;
    tft_env e = einsum_env();
    const int64_t s34[2] = {3, 4}, s43[2] = {4, 3};
    double a[12], b[12];
    fill(a, 12, 5);
    fill(b, 12, 9);
    tf_tensor *ha = tft_host(TF_F64, 2, s34, a, 12), *hb = tft_host(TF_F64, 2, s43, b, 12);
    tf_tensor *ta, *rb;
    const int perm[2] = {1, 0}, axes[1] = {0};
    TF_ASSERT_OK(tf_tensor_transpose(ha, perm, &ta));  /* [4, 3], strided */
    TF_ASSERT_OK(tf_tensor_reverse(hb, 1, axes, &rb)); /* [4, 3], reversed rows */
    tf_eager *x, *y, *out;
    TF_ASSERT_OK(tf_runtime_constant_from(e.rt, ta, &x));
    TF_ASSERT_OK(tf_runtime_constant_from(e.rt, rb, &y));
    tf_eager *ops[2] = {x, y};
    TF_ASSERT_OK(tf_einsum(e.s, "ij,ik->jk", 2, ops, &out)); /* x^T y: [3, 3] */
    double got[9];
    TF_ASSERT_OK(tf_tensor_copy_to_host(tf_eager_value(out), TF_F64, got, 9));
    for (int j = 0; j < 3; j++)
        for (int k = 0; k < 3; k++) {
            double want = 0;
            for (int i = 0; i < 4; i++) /* x[i][j] = a[j][i]; y[i][k] = b[3 - i][k] */
                want += a[j + 3 * i] * b[(3 - i) + 4 * k];
            assert_true(fabs(got[j + 3 * k] - want) < 1e-12);
        }
    tf_eager_release(out);
    tf_eager_release(x);
    tf_eager_release(y);
    tf_tensor_release(ta);
    tf_tensor_release(rb);
    tf_tensor_release(ha);
    tf_tensor_release(hb);
    tft_env_end(&e);
}

/* ---- malformed expressions ---- */

typedef struct bad_case {
    const char *subscripts, *shapes;
    tf_status status;
    const char *argument, *needle; /* needle: a piece of the message ("at byte 3") */
} bad_case;

static const bad_case k_bad[] = {
    {"ij,jk->ik", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 2, 2 terms for 1 operands"},
    {"ij", "2x3,3x4", TF_ERR_VALIDATION, "operands", "at byte 2, 1 terms for 2 operands"},
    {"i", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 1, operand 0 has rank 2"},
    {"ijk", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 2, operand 0 has rank 2"},
    {"ij-", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 2, a '-' that does not start"},
    {"ij->i->j", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 5, a second \"->\""},
    {"ij>i", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 2, '>' without the '-'"},
    {"i.j", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 1, a '.' that is not part"},
    {"i....j", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 1, a '.' that is not part"},
    {"...i...", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 4, a second '...'"},
    {"1j", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 0, '1' is not an index"},
    {"i_j", "2x3x4", TF_ERR_VALIDATION, "subscripts", "at byte 1, '_' is not an index"},
    {"ij->ii", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 5, an index that appears twice"},
    {"ij->k", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 4, an output index that no"},
    {"ij->i,j", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 5, a ',' in the output"},
    {"...ij->ij", "4x2x3", TF_ERR_VALIDATION, "subscripts", "at byte 7, the operands' '...'"},
    {"i\xce", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 1, invalid UTF-8"},
    {"i\xc0\xaf", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 1, invalid UTF-8"},
    {"i\xed\xa0\x80", "2x3", TF_ERR_VALIDATION, "subscripts", "at byte 1, invalid UTF-8"},
    {"abcde,fghi->abcdefghi", "1x1x1x1x1,1x1x1x1", TF_ERR_VALIDATION, "subscripts",
     "at byte 12, an output of rank 9"},
    {"ij,jk->ik", "2x3,4x5", TF_ERR_SHAPE_MISMATCH, "operands", "subscripts byte 3"},
    {"iij", "2x3x4", TF_ERR_SHAPE_MISMATCH, "operands", "subscripts byte 1"},
    {"...i,...i", "2x3,5x3", TF_ERR_SHAPE_MISMATCH, "operands", "'...' axis 0"},
};

static void test_malformed_expressions(void **state)
{
    (void)state;
    tft_env e = einsum_env();
    tf_runtime_stats before, after;
    for (size_t i = 0; i < sizeof k_bad / sizeof k_bad[0]; i++) {
        const bad_case *b = &k_bad[i];
        ref_case c = make_case("", b->shapes);
        tf_eager *ops[REF_MAX_OPS], *out = TFT_SENTINEL;
        for (uint32_t t = 0; t < c.n; t++) {
            double d[64] = {0};
            ops[t] = tft_f64(e.rt, 1, c.rank[t], c.shape[t], d, ref_numel(c.rank[t], c.shape[t]));
        }
        TF_ASSERT_OK(tf_runtime_cache_stats(e.rt, &before));
        tf_status st = tf_einsum(e.s, b->subscripts, c.n, ops, &out);
        if (st != b->status || strcmp(tf_error_argument(), b->argument) != 0 ||
            !strstr(tf_error_message(), b->needle))
            fail_msg("'%s': %s '%s' \"%s\", expected %s '%s' with \"%s\"", b->subscripts,
                     tf_status_name(st), tf_error_argument(), tf_error_message(),
                     tf_status_name(b->status), b->argument, b->needle);
        assert_ptr_equal(out, TFT_SENTINEL);
        assert_string_equal(tf_error_op(), TF_EINSUM_OP);
        /* nothing changed: no plan cached, no gradient anywhere */
        TF_ASSERT_OK(tf_runtime_cache_stats(e.rt, &after));
        assert_int_equal(after.extensions.entries, before.extensions.entries);
        for (uint32_t t = 0; t < c.n; t++) {
            tf_tensor *g;
            TF_ASSERT_OK(tf_eager_grad(ops[t], &g));
            assert_null(g);
            tf_eager_release(ops[t]);
        }
    }
    tft_env_end(&e);
}

static void test_bad_options_and_operands(void **state)
{
    (void)state;
    tft_env e = einsum_env();
    const int64_t s2[1] = {2};
    const double v[2] = {1, 2};
    tf_eager *x = ext_tensor(e.rt, 1, s2, v, 0), *ops[1] = {x}, *out;
    tf_einsum_options o = {sizeof o, 9, 0, 0, 0, 0, 0};
    TFT_EXPECT_FAIL(tf_einsum_with(e.s, "i->", 1, ops, &o, &out), TF_ERR_VALIDATION, "optimize",
                    out);
    o.optimize = TF_EINSUM_AUTO;
    o.memory_limit = -1;
    TFT_EXPECT_FAIL(tf_einsum_with(e.s, "i->", 1, ops, &o, &out), TF_ERR_VALIDATION, "memory_limit",
                    out);
    o.memory_limit = NAN;
    TFT_EXPECT_FAIL(tf_einsum_with(e.s, "i->", 1, ops, &o, &out), TF_ERR_VALIDATION, "memory_limit",
                    out);
    TFT_EXPECT_FAIL(tf_einsum(e.s, "", 0, ops, &out), TF_ERR_VALIDATION, "operands", out);
    TFT_EXPECT_FAIL(tf_einsum(e.s, NULL, 1, ops, &out), TF_ERR_VALIDATION, "subscripts", out);
    tf_eager *with_null[2] = {x, NULL};
    TFT_EXPECT_FAIL(tf_einsum(e.s, "i,i", 2, with_null, &out), TF_ERR_VALIDATION, "operands", out);
    /* a memory limit every intermediate exceeds (the output is never limited) */
    const int64_t s23[2] = {2, 3}, s33[2] = {3, 3}, s32[2] = {3, 2};
    double d[9] = {0};
    tf_eager *p = ext_tensor(e.rt, 2, s23, d, 0), *q = ext_tensor(e.rt, 2, s33, d, 0);
    tf_eager *r = ext_tensor(e.rt, 2, s32, d, 0), *pqr[3] = {p, q, r};
    o.memory_limit = 5;
    TFT_EXPECT_FAIL(tf_einsum_with(e.s, "ij,jk,kl->il", 3, pqr, &o, &out), TF_ERR_UNSUPPORTED,
                    "memory_limit", out);
    o.memory_limit = 6;
    TF_ASSERT_OK(tf_einsum_with(e.s, "ij,jk,kl->il", 3, pqr, &o, &out));
    tf_eager_release(out);
    tf_eager *two[2] = {x, x};
    o.memory_limit = 1; /* one step: its result is the output */
    TF_ASSERT_OK(tf_einsum_with(e.s, "i,j->ij", 2, two, &o, &out));
    tf_eager_release(out);
    tf_eager_release(p);
    tf_eager_release(q);
    tf_eager_release(r);
    tf_eager_release(x);
    tft_env_end(&e);
    /* not installed */
    tft_env bare = tft_env_begin();
    tf_eager *y = ext_tensor(bare.rt, 1, s2, v, 0), *yo[1] = {y};
    TFT_EXPECT_FAIL(tf_einsum(bare.s, "i->", 1, yo, &out), TF_ERR_VALIDATION, "name", out);
    tf_eager_release(y);
    tft_env_end(&bare);
}

/* ---- the plan cache ---- */

static void test_plan_cache(void **state)
{
    (void)state;
    tft_env e = einsum_env();
    const int64_t s23[2] = {2, 3}, s34[2] = {3, 4}, s35[2] = {3, 5};
    double d[20] = {0};
    tf_eager *a = ext_tensor(e.rt, 2, s23, d, 0), *b = ext_tensor(e.rt, 2, s34, d, 0);
    tf_eager *c = ext_tensor(e.rt, 2, s35, d, 0), *ab[2] = {a, b}, *ac[2] = {a, c}, *out;
    tf_cache_stats s0, s1, s2, s3;
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(e.rt, TF_EINSUM_MODULE_ID, &s0));
    TF_ASSERT_OK(tf_einsum(e.s, "ij,jk->ik", 2, ab, &out));
    tf_eager_release(out);
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(e.rt, TF_EINSUM_MODULE_ID, &s1));
    assert_int_equal(s1.misses, s0.misses + 1);
    assert_int_equal(s1.entries, s0.entries + 1);
    TF_ASSERT_OK(tf_einsum(e.s, "ij,jk->ik", 2, ab, &out)); /* the same key: a hit */
    tf_eager_release(out);
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(e.rt, TF_EINSUM_MODULE_ID, &s2));
    assert_int_equal(s2.hits, s1.hits + 1);
    assert_int_equal(s2.entries, s1.entries);
    TF_ASSERT_OK(tf_einsum(e.s, "ij,jk->ik", 2, ac, &out)); /* another shape: a miss */
    tf_eager_release(out);
    tf_einsum_options greedy = {sizeof greedy, TF_EINSUM_GREEDY, 0, 0, 0, 0, 0};
    TF_ASSERT_OK(tf_einsum_with(e.s, "ij,jk->ik", 2, ab, &greedy, &out)); /* other options */
    tf_eager_release(out);
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(e.rt, TF_EINSUM_MODULE_ID, &s3));
    assert_int_equal(s3.misses, s2.misses + 2);
    assert_int_equal(s3.entries, s2.entries + 2);
    tf_runtime_stats all;
    TF_ASSERT_OK(tf_runtime_cache_stats(e.rt, &all));
    assert_true(all.extensions.entries >= s3.entries && all.extensions.hits >= 1);
    TF_ASSERT_OK(tf_runtime_clear_caches(e.rt));
    TF_ASSERT_OK(tf_runtime_extension_cache_stats(e.rt, TF_EINSUM_MODULE_ID, &s3));
    assert_int_equal(s3.entries, 0);
    TF_ASSERT_OK(tf_einsum(e.s, "ij,jk->ik", 2, ab, &out)); /* planned again */
    tf_eager_release(out);
    tf_eager_release(a);
    tf_eager_release(b);
    tf_eager_release(c);
    tft_env_end(&e);
}

/* The same module on the Vulkan engine (lavapipe in CI): no kernel of its own is
   needed, it runs the engine's DOT_GENERAL, views and sums. Run as test_einsum_vulkan
   (TF_EINSUM_ENGINE=vulkan, label vulkan: the valgrind run leaves the driver out). */
static void test_other_engine(void **state)
{
    (void)state;
    const char *which = getenv("TF_EINSUM_ENGINE");
    if (!which || strcmp(which, "vulkan") != 0)
        skip();
    tf_engine *vk = NULL;
    if (tf_engine_open("vulkan", 0, &vk) != TF_OK) {
        fprintf(stderr, "test_einsum: no Vulkan engine (%s): skipped\n", tf_error_message());
        skip();
    }
    tft_env e;
    TF_ASSERT_OK(tf_runtime_create(&e.rt));
    TF_ASSERT_OK(tf_einsum_install(e.rt, NULL));
    TF_ASSERT_OK(tf_session_begin(e.rt, vk, &e.s));
    g_engine = vk;
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        ref_case c = make_case(k_cases[i][0], k_cases[i][1]);
        check_case(&e, &c, TF_EINSUM_AUTO);
    }
    unsigned seed = 77;
    for (int k = 0; k < 100; k++) {
        ref_case c;
        ref_random_case(&seed, 6, &c);
        check_case(&e, &c, TF_EINSUM_AUTO);
    }
    g_engine = g_cpu;
    tf_session_end(e.s);
    tf_runtime_release(e.rt);
    tf_engine_destroy(vk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chosen_expressions),
        cmocka_unit_test(test_random_expressions),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_strided_operands),
        cmocka_unit_test(test_malformed_expressions),
        cmocka_unit_test(test_bad_options_and_operands),
        cmocka_unit_test(test_plan_cache),
        cmocka_unit_test(test_other_engine),
    };
    return cmocka_run_group_tests(tests, setup, tft_cpu_teardown);
}
