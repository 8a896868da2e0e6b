/*
 * test_cpu_index.c - GATHER, SCATTER, DYNAMIC_SLICE and DYNAMIC_UPDATE_SLICE
 * of the CPU engine against reference loops: both gather modes, i32 and i64
 * indices, every dtype of data, duplicate indices (ADD sums them, REPLACE
 * keeps the last in column-major order), empty indices, start clamping from
 * far outside the tensor, inputs of every layout.
 */
#include "cpu_fixture.h"

static const tf_dtype all_dtypes[] = {TF_F32, TF_F64, TF_I32, TF_I64, TF_BOOL};
static const tf_dtype index_dtypes[] = {TF_I32, TF_I64};

static tfr_gen data_values(void)
{
    return (tfr_gen){TFR_SPECIAL, -1000.0, 1000.0};
}

/* An index tensor of `shape` with values in [0, extent) in a random layout. */
static void make_index(tfr_input *idx, tfr_rng *rng, tf_dtype dtype, size_t rank,
                       const int64_t *shape, int64_t extent)
{
    tfr_gen g = {TFR_UNIFORM, 0.0, (double)(extent > 0 ? extent - 1 : 0)};
    tfr_input_make(idx, rng, cpu_engine, dtype, rank, shape, tfr_random_layout(rng), &g);
}

/* Shapes for one gather/scatter problem: x (or base), index, and out (or updates). */
typedef struct gather_case {
    tf_gather_params p;
    size_t rank;
    int64_t xshape[TF_MAX_RANK];
    size_t irank;
    int64_t ishape[TF_MAX_RANK];
    int64_t oshape[TF_MAX_RANK]; /* rank `rank` in both modes */
} gather_case;

static void gather_random(tfr_rng *rng, tf_gather_mode mode, gather_case *c)
{
    memset(c, 0, sizeof *c);
    c->rank = 1 + (size_t)tfr_rng_int(rng, 0, 3);
    tfr_random_shape(rng, c->rank, 5, 8, c->xshape);
    c->p.struct_size = sizeof c->p;
    c->p.mode = mode;
    c->p.axis = (uint32_t)tfr_rng_int(rng, 0, (int64_t)c->rank - 1);
    int64_t ax_ext = c->xshape[c->p.axis];
    if (mode == TF_GATHER_INDEX_SELECT) {
        c->irank = 1;
        c->ishape[0] = ax_ext == 0 ? 0 : tfr_rng_int(rng, 0, 7);
        memcpy(c->oshape, c->xshape, c->rank * sizeof *c->xshape);
        c->oshape[c->p.axis] = c->ishape[0];
        return;
    }
    c->irank = c->rank;
    for (size_t k = 0; k < c->rank; k++)
        c->ishape[k] = k == c->p.axis ? tfr_rng_int(rng, 0, 6) : tfr_rng_int(rng, 0, c->xshape[k]);
    if (ax_ext == 0)
        c->ishape[c->p.axis] = 0;
    memcpy(c->oshape, c->ishape, c->rank * sizeof *c->ishape);
}

/* The position in x read (or written) for output/update position j. */
static int64_t gather_source(const gather_case *c, const tfr_input *index, const int64_t *j)
{
    int64_t x[TF_MAX_RANK];
    memcpy(x, j, c->rank * sizeof *j);
    if (c->p.mode == TF_GATHER_INDEX_SELECT)
        x[c->p.axis] = index->vals[j[c->p.axis]].i;
    else
        x[c->p.axis] = index->vals[tfr_index_linear(c->rank, c->ishape, j)].i;
    return tfr_index_linear(c->rank, c->xshape, x);
}

static void gather_describe(const char *prim, const gather_case *c, tf_dtype dt, tf_dtype it,
                            char *buf, size_t size)
{
    char x[96], i[96];
    snprintf(buf, size, "%s %s x %s %s index %s %s axis %u", prim,
             c->p.mode == TF_GATHER_INDEX_SELECT ? "index_select" : "along_axis", tf_dtype_name(dt),
             tfr_shape_str(c->rank, c->xshape, x, sizeof x), tf_dtype_name(it),
             tfr_shape_str(c->irank, c->ishape, i, sizeof i), c->p.axis);
}

static void gather_once(tfr_rng *rng, tf_gather_mode mode, tf_dtype dt, tf_dtype it)
{
    gather_case c;
    tfr_input x, index;
    char what[256];
    tfr_gen g = data_values();
    gather_random(rng, mode, &c);
    tfr_input_make(&x, rng, cpu_engine, dt, c.rank, c.xshape, tfr_random_layout(rng), &g);
    make_index(&index, rng, it, c.irank, c.ishape, c.xshape[c.p.axis]);
    gather_describe("gather", &c, dt, it, what, sizeof what);
    tf_tensor *in[2] = {x.t, index.t};
    tf_tensor *out = tfr_output(cpu_engine, dt, c.rank, c.oshape);
    tfr_exec_ok(what, cpu_engine, TF_PRIM_GATHER, &c.p, 2, in, 1, &out);
    size_t n = tfr_numel(c.rank, c.oshape);
    tf_scalar *got = tfr_read(out), *want = tfr_vals_alloc(n);
    int64_t j[TF_MAX_RANK] = {0};
    for (size_t i = 0; i < n; i++, tfr_index_next(c.rank, c.oshape, j))
        want[i] = x.vals[gather_source(&c, &index, j)];
    tfr_check(what, dt, n, got, want, NULL, (tfr_tol){0, 0});
    free(got);
    free(want);
    tf_tensor_release(out);
    tfr_input_free(&x);
    tfr_input_free(&index);
}

static void test_gather(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 501);
    for (int mode = 0; mode < 2; mode++)
        for (size_t d = 0; d < 5; d++)
            for (size_t i = 0; i < 2; i++)
                for (int t = 0; t < 15; t++)
                    gather_once(&rng, (tf_gather_mode)mode, all_dtypes[d], index_dtypes[i]);
}

/* ===================================================================== */
/* SCATTER                                                                */
/* ===================================================================== */

/* out = base; then every update, in column-major order, combined into place. */
static void scatter_ref(const gather_case *c, tf_dtype dt, const tfr_input *base,
                        const tfr_input *index, const tfr_input *upd, tf_scalar *want)
{
    size_t n_base = tfr_numel(c->rank, c->xshape), n_upd = tfr_numel(c->rank, c->oshape);
    int64_t j[TF_MAX_RANK] = {0};
    memcpy(want, base->vals, n_base * sizeof *want);
    for (size_t i = 0; i < n_upd; i++, tfr_index_next(c->rank, c->oshape, j)) {
        int64_t dst = gather_source(c, index, j);
        tf_scalar u = upd->vals[i];
        if (c->p.combine == TF_SCATTER_REPLACE)
            want[dst] = u;
        else if (tf_dtype_is_float(dt))
            want[dst] = tfr_norm(dt, tfr_f(want[dst].f + u.f)); /* exact: integral values */
        else
            want[dst] = tfr_norm(dt, tfr_i((int64_t)((uint64_t)want[dst].i + (uint64_t)u.i)));
    }
}

static void scatter_once(tfr_rng *rng, tf_gather_mode mode, tf_scatter_combine combine, tf_dtype dt,
                         tf_dtype it)
{
    gather_case c;
    tfr_input base, index, upd;
    char what[256];
    /* integral floats keep ADD exact in any order; few index values force duplicates */
    tfr_gen g =
        tf_dtype_is_float(dt) ? (tfr_gen){TFR_INTEGRAL, -1000, 1000} : (tfr_gen){TFR_WIDE, 0, 0};
    gather_random(rng, mode, &c);
    c.p.combine = combine;
    tfr_input_make(&base, rng, cpu_engine, dt, c.rank, c.xshape, tfr_random_layout(rng), &g);
    make_index(&index, rng, it, c.irank, c.ishape, c.xshape[c.p.axis]);
    tfr_input_make(&upd, rng, cpu_engine, dt, c.rank, c.oshape, tfr_random_layout(rng), &g);
    gather_describe(combine == TF_SCATTER_ADD ? "scatter add" : "scatter replace", &c, dt, it, what,
                    sizeof what);
    tf_tensor *in[3] = {base.t, index.t, upd.t};
    tf_tensor *out = tfr_output(cpu_engine, dt, c.rank, c.xshape);
    tfr_exec_ok(what, cpu_engine, TF_PRIM_SCATTER, &c.p, 3, in, 1, &out);
    size_t n = tfr_numel(c.rank, c.xshape);
    tf_scalar *got = tfr_read(out), *want = tfr_vals_alloc(n);
    scatter_ref(&c, dt, &base, &index, &upd, want);
    tfr_check(what, dt, n, got, want, NULL, (tfr_tol){0, 0});
    free(got);
    free(want);
    tf_tensor_release(out);
    tfr_input_free(&base);
    tfr_input_free(&index);
    tfr_input_free(&upd);
}

static void test_scatter_add(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 502);
    for (int mode = 0; mode < 2; mode++)
        for (size_t d = 0; d < 4; d++) /* numeric dtypes */
            for (size_t i = 0; i < 2; i++)
                for (int t = 0; t < 15; t++)
                    scatter_once(&rng, (tf_gather_mode)mode, TF_SCATTER_ADD, all_dtypes[d],
                                 index_dtypes[i]);
}

static void test_scatter_replace(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 503);
    for (int mode = 0; mode < 2; mode++)
        for (size_t d = 0; d < 5; d++)
            for (size_t i = 0; i < 2; i++)
                for (int t = 0; t < 15; t++)
                    scatter_once(&rng, (tf_gather_mode)mode, TF_SCATTER_REPLACE, all_dtypes[d],
                                 index_dtypes[i]);
}

/* REPLACE with every index equal: the last update in column-major order wins. */
static void test_scatter_replace_last_wins(void **state)
{
    (void)state;
    int64_t bshape[2] = {3, 4}, ishape[1] = {5}, ushape[2] = {3, 5};
    tf_scalar bvals[12], ivals[5], uvals[15];
    for (int i = 0; i < 12; i++)
        bvals[i] = tfr_f(-1.0 - i);
    for (int i = 0; i < 5; i++)
        ivals[i] = tfr_i(2);
    for (int i = 0; i < 15; i++)
        uvals[i] = tfr_f(100.0 + i);
    tf_tensor *in[3] = {tfr_host(TF_F64, 2, bshape, bvals), tfr_host(TF_I64, 1, ishape, ivals),
                        tfr_host(TF_F64, 2, ushape, uvals)};
    tf_gather_params p = {sizeof p, 1, TF_GATHER_INDEX_SELECT, TF_SCATTER_REPLACE};
    tf_tensor *out = tfr_output(cpu_engine, TF_F64, 2, bshape);
    tfr_exec_ok("scatter replace, one index five times", cpu_engine, TF_PRIM_SCATTER, &p, 3, in, 1,
                &out);
    tf_scalar *got = tfr_read(out), want[12];
    memcpy(want, bvals, sizeof want);
    for (int r = 0; r < 3; r++)
        want[2 * 3 + r] = uvals[4 * 3 + r]; /* column 2 gets update column 4 */
    tfr_check("scatter replace, last wins", TF_F64, 12, got, want, NULL, (tfr_tol){0, 0});
    free(got);
    tf_tensor_release(out);
    for (int k = 0; k < 3; k++)
        tf_tensor_release(in[k]);
}

/* ===================================================================== */
/* DYNAMIC_SLICE and DYNAMIC_UPDATE_SLICE                                 */
/* ===================================================================== */

static int64_t clamp_start(int64_t s, int64_t extent, int64_t block)
{
    int64_t hi = extent - block;
    return s < 0 ? 0 : s > hi ? hi : s;
}

/* Random starts, often outside the tensor; sometimes the integer extremes. */
static void random_starts(tfr_rng *rng, tf_dtype it, size_t rank, const int64_t *shape,
                          tf_scalar *starts)
{
    for (size_t k = 0; k < rank; k++) {
        starts[k] = tfr_i(tfr_rng_int(rng, -3, shape[k] + 3));
        if (tfr_rng_chance(rng, 10))
            starts[k] = tfr_i(tfr_rng_chance(rng, 50) ? tfr_int_min(it) : tfr_int_max(it));
    }
}

static tf_tensor *starts_tensor(tfr_rng *rng, tf_dtype it, size_t rank, const tf_scalar *starts,
                                tfr_input *holder)
{
    int64_t n = (int64_t)rank;
    tfr_input_from_vals(holder, rng, cpu_engine, it, 1, &n, tfr_random_layout(rng), starts);
    return holder->t;
}

static void dynamic_slice_once(tfr_rng *rng, tf_dtype dt, tf_dtype it)
{
    int64_t xshape[TF_MAX_RANK], oshape[TF_MAX_RANK], st[TF_MAX_RANK];
    tf_scalar starts[TF_MAX_RANK];
    char what[200], a[96], b[96];
    size_t rank = tfr_random_rank(rng, 4);
    tfr_random_shape(rng, rank, 6, 8, xshape);
    for (size_t k = 0; k < rank; k++)
        oshape[k] = tfr_rng_int(rng, 0, xshape[k]);
    random_starts(rng, it, rank, xshape, starts);
    tfr_gen g = data_values();
    tfr_input x, sh;
    tfr_input_make(&x, rng, cpu_engine, dt, rank, xshape, tfr_random_layout(rng), &g);
    tf_tensor *in[2] = {x.t, starts_tensor(rng, it, rank, starts, &sh)};
    snprintf(what, sizeof what, "dynamic_slice %s %s -> %s, %s starts", tf_dtype_name(dt),
             tfr_shape_str(rank, xshape, a, sizeof a), tfr_shape_str(rank, oshape, b, sizeof b),
             tf_dtype_name(it));
    tf_tensor *out = tfr_output(cpu_engine, dt, rank, oshape);
    tfr_exec_ok(what, cpu_engine, TF_PRIM_DYNAMIC_SLICE, NULL, 2, in, 1, &out);
    for (size_t k = 0; k < rank; k++)
        st[k] = clamp_start(starts[k].i, xshape[k], oshape[k]);
    size_t n = tfr_numel(rank, oshape);
    tf_scalar *got = tfr_read(out), *want = tfr_vals_alloc(n);
    int64_t j[TF_MAX_RANK] = {0}, s[TF_MAX_RANK];
    for (size_t i = 0; i < n; i++, tfr_index_next(rank, oshape, j)) {
        for (size_t k = 0; k < rank; k++)
            s[k] = j[k] + st[k];
        want[i] = x.vals[tfr_index_linear(rank, xshape, s)];
    }
    tfr_check(what, dt, n, got, want, NULL, (tfr_tol){0, 0});
    free(got);
    free(want);
    tf_tensor_release(out);
    tfr_input_free(&x);
    tfr_input_free(&sh);
}

static void dynamic_update_once(tfr_rng *rng, tf_dtype dt, tf_dtype it)
{
    int64_t bshape[TF_MAX_RANK], ushape[TF_MAX_RANK], st[TF_MAX_RANK];
    tf_scalar starts[TF_MAX_RANK];
    char what[200], a[96], b[96];
    size_t rank = tfr_random_rank(rng, 4);
    tfr_random_shape(rng, rank, 6, 8, bshape);
    for (size_t k = 0; k < rank; k++)
        ushape[k] = tfr_rng_int(rng, 0, bshape[k]);
    random_starts(rng, it, rank, bshape, starts);
    tfr_gen g = data_values();
    tfr_input base, upd, sh;
    tfr_input_make(&base, rng, cpu_engine, dt, rank, bshape, tfr_random_layout(rng), &g);
    tfr_input_make(&upd, rng, cpu_engine, dt, rank, ushape, tfr_random_layout(rng), &g);
    tf_tensor *in[3] = {base.t, upd.t, starts_tensor(rng, it, rank, starts, &sh)};
    snprintf(what, sizeof what, "dynamic_update_slice %s %s <- %s, %s starts", tf_dtype_name(dt),
             tfr_shape_str(rank, bshape, a, sizeof a), tfr_shape_str(rank, ushape, b, sizeof b),
             tf_dtype_name(it));
    tf_tensor *out = tfr_output(cpu_engine, dt, rank, bshape);
    tfr_exec_ok(what, cpu_engine, TF_PRIM_DYNAMIC_UPDATE_SLICE, NULL, 3, in, 1, &out);
    for (size_t k = 0; k < rank; k++)
        st[k] = clamp_start(starts[k].i, bshape[k], ushape[k]);
    size_t n = tfr_numel(rank, bshape), nu = tfr_numel(rank, ushape);
    tf_scalar *got = tfr_read(out), *want = tfr_vals_alloc(n);
    memcpy(want, base.vals, n * sizeof *want);
    int64_t j[TF_MAX_RANK] = {0}, s[TF_MAX_RANK];
    for (size_t i = 0; i < nu; i++, tfr_index_next(rank, ushape, j)) {
        for (size_t k = 0; k < rank; k++)
            s[k] = j[k] + st[k];
        want[tfr_index_linear(rank, bshape, s)] = upd.vals[i];
    }
    tfr_check(what, dt, n, got, want, NULL, (tfr_tol){0, 0});
    free(got);
    free(want);
    tf_tensor_release(out);
    tfr_input_free(&base);
    tfr_input_free(&upd);
    tfr_input_free(&sh);
}

static void test_dynamic_slice(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 504);
    for (size_t d = 0; d < 5; d++)
        for (size_t i = 0; i < 2; i++)
            for (int t = 0; t < 25; t++)
                dynamic_slice_once(&rng, all_dtypes[d], index_dtypes[i]);
}

static void test_dynamic_update_slice(void **state)
{
    (void)state;
    tfr_rng rng;
    tfr_rng_seed(&rng, 505);
    for (size_t d = 0; d < 5; d++)
        for (size_t i = 0; i < 2; i++)
            for (int t = 0; t < 25; t++)
                dynamic_update_once(&rng, all_dtypes[d], index_dtypes[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gather),          cmocka_unit_test(test_scatter_add),
        cmocka_unit_test(test_scatter_replace), cmocka_unit_test(test_scatter_replace_last_wins),
        cmocka_unit_test(test_dynamic_slice),   cmocka_unit_test(test_dynamic_update_slice),
    };
    return CPU_RUN_GROUPS("cpu index", tests);
}
