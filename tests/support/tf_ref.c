/*
 * tf_ref.c - reference helpers for the primitive tests (see tf_ref.h): the
 * PRNG, shapes, host tensors, inputs of every layout, strided outputs and
 * engine calls (values and comparison: tf_ref_values.c).
 *
 * Written from the public headers only. Views are built with the tensor
 * API; their reference values come from our own copy of the storage read
 * through the view's strides and offset, never from an engine.
 */
#include "tf_ref.h"

#include <math.h>
#include <stdio.h>

/* ---- PRNG ---- */

void tfr_rng_seed(tfr_rng *rng, uint64_t seed)
{
    rng->state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
}

uint64_t tfr_rng_u64(tfr_rng *rng)
{
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int64_t tfr_rng_int(tfr_rng *rng, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1u;
    if (span == 0) /* the whole int64 range */
        return (int64_t)tfr_rng_u64(rng);
    return (int64_t)((uint64_t)lo + tfr_rng_u64(rng) % span);
}

double tfr_rng_real(tfr_rng *rng, double lo, double hi)
{
    double u = (double)(tfr_rng_u64(rng) >> 11) * 0x1p-53;
    return lo + (hi - lo) * u;
}

int tfr_rng_chance(tfr_rng *rng, int percent)
{
    return tfr_rng_int(rng, 0, 99) < percent;
}

void tfr_rng_perm(tfr_rng *rng, size_t n, int *perm)
{
    for (size_t i = 0; i < n; i++)
        perm[i] = (int)i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)tfr_rng_int(rng, 0, (int64_t)i - 1);
        int t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

/* ---- shapes ---- */

size_t tfr_numel(size_t rank, const int64_t *shape)
{
    size_t n = 1;
    for (size_t k = 0; k < rank; k++)
        n *= (size_t)shape[k];
    return n;
}

int tfr_index_next(size_t rank, const int64_t *shape, int64_t *idx)
{
    for (size_t k = 0; k < rank; k++) {
        if (++idx[k] < shape[k])
            return 1;
        idx[k] = 0;
    }
    return 0;
}

int64_t tfr_index_linear(size_t rank, const int64_t *shape, const int64_t *idx)
{
    int64_t lin = 0;
    for (size_t k = rank; k-- > 0;)
        lin = lin * shape[k] + idx[k];
    return lin;
}

size_t tfr_random_rank(tfr_rng *rng, size_t max_rank)
{
    if (tfr_rng_chance(rng, 10))
        return 0;
    if (max_rank > 3 && tfr_rng_chance(rng, 20))
        return (size_t)tfr_rng_int(rng, 4, (int64_t)max_rank);
    return (size_t)tfr_rng_int(rng, 1, max_rank < 3 ? (int64_t)max_rank : 3);
}

void tfr_random_shape(tfr_rng *rng, size_t rank, int64_t max_extent, int zero_percent,
                      int64_t *shape)
{
    for (size_t k = 0; k < rank; k++)
        shape[k] = tfr_rng_chance(rng, zero_percent) ? 0 : tfr_rng_int(rng, 1, max_extent);
}

const char *tfr_shape_str(size_t rank, const int64_t *shape, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (size_t k = 0; k < rank && used < size; k++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%lld", k ? "," : "", (long long)shape[k]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* ---- host tensors and reading ---- */

tf_scalar *tfr_vals_alloc(size_t n)
{
    tf_scalar *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        fail_msg("out of memory allocating %zu values", n);
    return v;
}

void *tfr_pack(tf_dtype dtype, size_t n, const tf_scalar *vals)
{
    void *buf = calloc(n ? n : 1, tf_dtype_size(dtype));
    if (!buf)
        fail_msg("out of memory packing %zu values", n);
    for (size_t i = 0; i < n; i++)
        tfr_store(dtype, buf, (int64_t)i, vals[i]);
    return buf;
}

tf_tensor *tfr_host(tf_dtype dtype, size_t rank, const int64_t *shape, const tf_scalar *vals)
{
    size_t n = tfr_numel(rank, shape);
    void *buf = tfr_pack(dtype, n, vals);
    tf_tensor *t = NULL;
    TF_ASSERT_OK(tf_tensor_from_host(dtype, rank, shape, buf, n, &t));
    free(buf);
    return t;
}

tf_scalar *tfr_read(const tf_tensor *tensor)
{
    tf_dtype dtype = tf_tensor_dtype(tensor);
    size_t n = tf_tensor_numel(tensor);
    void *buf = calloc(n ? n : 1, tf_dtype_size(dtype));
    tf_scalar *vals = tfr_vals_alloc(n);
    if (!buf)
        fail_msg("out of memory reading %zu elements", n);
    TF_ASSERT_OK(tf_tensor_copy_to_host(tensor, dtype, buf, n));
    for (size_t i = 0; i < n; i++)
        vals[i] = tfr_load(dtype, buf, (int64_t)i);
    free(buf);
    return vals;
}

tf_scalar *tfr_read_strided(const tf_tensor *view, const void *storage)
{
    size_t rank = tf_tensor_rank(view);
    const int64_t *shape = tf_tensor_shape(view);
    const int64_t *strides = tf_tensor_strides(view);
    size_t n = tf_tensor_numel(view);
    tf_scalar *vals = tfr_vals_alloc(n);
    int64_t idx[TF_MAX_RANK] = {0};
    for (size_t i = 0; i < n; i++) {
        int64_t off = tf_tensor_offset(view);
        for (size_t k = 0; k < rank; k++)
            off += idx[k] * strides[k];
        vals[i] = tfr_load(tf_tensor_dtype(view), storage, off);
        tfr_index_next(rank, shape, idx);
    }
    return vals;
}

/* ---- layouts ---- */

const char *tfr_layout_name(tfr_layout layout)
{
    static const char *names[] = {"dense",   "transposed", "sliced",        "reversed", "broadcast",
                                  "stride0", "uploaded",   "uploaded-view", "mixed"};
    return layout < TFR_LAYOUT_COUNT_ ? names[layout] : "?";
}

tfr_layout tfr_random_layout(tfr_rng *rng)
{
    return (tfr_layout)tfr_rng_int(rng, 0, TFR_LAYOUT_COUNT_ - 1);
}

/* How a view is cut from its root: the root's shape and the view recipe. */
typedef struct recipe {
    size_t root_rank;
    int64_t root_shape[TF_MAX_RANK];
    int perm[TF_MAX_RANK];      /* transpose: view axis i is root axis perm[i] */
    int64_t start[TF_MAX_RANK]; /* slice */
    int64_t limit[TF_MAX_RANK];
    int64_t step[TF_MAX_RANK];
    int rev[TF_MAX_RANK]; /* axes to reverse */
    size_t n_rev;
    int dims[TF_MAX_RANK];        /* broadcast: root axis i is view axis dims[i] */
    int64_t strides[TF_MAX_RANK]; /* stride0 view */
} recipe;

static void plan_slice(tfr_rng *rng, size_t rank, const int64_t *shape, recipe *r)
{
    for (size_t k = 0; k < rank; k++) {
        r->start[k] = tfr_rng_int(rng, 0, 2);
        r->step[k] = tfr_rng_int(rng, 1, 3);
        r->limit[k] = shape[k] ? r->start[k] + (shape[k] - 1) * r->step[k] + 1 : r->start[k];
        r->root_shape[k] = r->limit[k] + tfr_rng_int(rng, 0, 2);
    }
}

static void plan_reverse(tfr_rng *rng, size_t rank, recipe *r)
{
    r->n_rev = 0;
    for (size_t k = 0; k < rank; k++)
        if (tfr_rng_chance(rng, 60))
            r->rev[r->n_rev++] = (int)k;
    if (r->n_rev == 0 && rank > 0)
        r->rev[r->n_rev++] = (int)tfr_rng_int(rng, 0, (int64_t)rank - 1);
}

static void plan_broadcast(tfr_rng *rng, size_t rank, const int64_t *shape, recipe *r)
{
    r->root_rank = 0;
    for (size_t k = 0; k < rank; k++) {
        if (tfr_rng_chance(rng, 40) && shape[k] != 0)
            continue; /* a new, stretched axis */
        r->dims[r->root_rank] = (int)k;
        r->root_shape[r->root_rank++] = (shape[k] == 0 || tfr_rng_chance(rng, 50)) ? shape[k] : 1;
    }
}

static void plan_stride0(tfr_rng *rng, size_t rank, const int64_t *shape, recipe *r)
{
    int64_t stride = 1;
    for (size_t k = 0; k < rank; k++) {
        int stretch = shape[k] > 1 && tfr_rng_chance(rng, 50);
        r->root_shape[k] = stretch ? 1 : shape[k];
        r->strides[k] = stretch ? 0 : stride;
        stride *= r->root_shape[k];
    }
}

/* Plans how to cut a view of `shape` from a root for `layout`. */
static void plan(tfr_rng *rng, tfr_layout layout, size_t rank, const int64_t *shape, recipe *r)
{
    int64_t pre[TF_MAX_RANK] = {0};
    memset(r, 0, sizeof *r);
    r->root_rank = rank;
    if (rank) /* shape may be NULL for rank 0 */
        memcpy(r->root_shape, shape, rank * sizeof *shape);
    tfr_rng_perm(rng, rank, r->perm);
    for (size_t i = 0; i < rank; i++)
        pre[r->perm[i]] = shape[i]; /* the shape before transposing */
    switch (layout) {
    case TFR_TRANSPOSED:
    case TFR_UPLOADED_VIEW: memcpy(r->root_shape, pre, rank * sizeof *pre); break;
    case TFR_SLICED: plan_slice(rng, rank, shape, r); break;
    case TFR_MIXED: plan_slice(rng, rank, pre, r); break;
    case TFR_BROADCAST: plan_broadcast(rng, rank, shape, r); break;
    case TFR_STRIDE0: plan_stride0(rng, rank, shape, r); break;
    default: break;
    }
    if (layout == TFR_REVERSED || layout == TFR_MIXED || layout == TFR_UPLOADED_VIEW)
        plan_reverse(rng, rank, r);
}

/* Replaces *t by *next, the view just made of it (dropping the old reference). */
static void chain(tf_tensor **t, tf_status st, tf_tensor **next, const char *what)
{
    if (st != TF_OK)
        fail_msg("building a view (%s): %s: %s", what, tf_status_name(st), tf_error_message());
    tf_tensor_release(*t);
    *t = *next;
    *next = NULL;
}

static tf_tensor *cut_view(tf_tensor *root, tfr_layout layout, size_t rank, const int64_t *shape,
                           const recipe *r)
{
    tf_tensor *t = root, *next = NULL;
    tf_tensor_retain(root);
    if (layout == TFR_SLICED || layout == TFR_MIXED)
        chain(&t, tf_tensor_slice(t, r->start, r->limit, r->step, &next), &next, "slice");
    if (layout == TFR_REVERSED || layout == TFR_MIXED || layout == TFR_UPLOADED_VIEW)
        chain(&t, tf_tensor_reverse(t, r->n_rev, r->rev, &next), &next, "reverse");
    if (layout == TFR_TRANSPOSED || layout == TFR_MIXED || layout == TFR_UPLOADED_VIEW)
        chain(&t, tf_tensor_transpose(t, r->perm, &next), &next, "transpose");
    if (layout == TFR_BROADCAST)
        chain(&t, tf_tensor_broadcast_in_dim(t, rank, shape, r->dims, &next), &next, "broadcast");
    if (layout == TFR_STRIDE0)
        chain(&t, tf_tensor_view(t, rank, shape, r->strides, 0, &next), &next, "view");
    return t;
}

static void check_view(const tfr_input *in, size_t rank, const int64_t *shape)
{
    char a[96], b[96];
    if (tf_tensor_rank(in->t) != rank ||
        (rank && memcmp(tf_tensor_shape(in->t), shape, rank * sizeof *shape) != 0))
        fail_msg("%s view has shape %s, wanted %s", tfr_layout_name(in->layout),
                 tfr_shape_str(tf_tensor_rank(in->t), tf_tensor_shape(in->t), a, sizeof a),
                 tfr_shape_str(rank, shape, b, sizeof b));
    tf_scalar *core = tfr_read(in->t);
    tfr_check("core tf_tensor_copy_to_host vs reference reader", tf_tensor_dtype(in->t), in->n,
              core, in->vals, NULL, (tfr_tol){0.0, 0.0});
    free(core);
}

/* Builds the root from storage values and the view; fills in->t and in->vals. */
static void build_input(tfr_input *in, tfr_rng *rng, tf_engine *engine, tf_dtype dtype, size_t rank,
                        const int64_t *shape, tfr_layout layout, const recipe *r,
                        const tf_scalar *root_vals)
{
    tf_tensor *root = tfr_host(dtype, r->root_rank, r->root_shape, root_vals);
    void *storage = tfr_pack(dtype, tfr_numel(r->root_rank, r->root_shape), root_vals);
    (void)rng;
    if (layout == TFR_UPLOADED || layout == TFR_UPLOADED_VIEW) {
        tf_tensor *dev = NULL;
        TF_ASSERT_OK(tf_engine_upload(engine, root, &dev));
        tf_tensor_release(root);
        root = dev;
    }
    in->layout = layout;
    in->n = tfr_numel(rank, shape);
    in->t = cut_view(root, layout, rank, shape, r);
    tf_tensor_release(root);
    in->vals = tfr_read_strided(in->t, storage);
    free(storage);
    check_view(in, rank, shape);
}

void tfr_input_make(tfr_input *in, tfr_rng *rng, tf_engine *engine, tf_dtype dtype, size_t rank,
                    const int64_t *shape, tfr_layout layout, const tfr_gen *gen)
{
    recipe r;
    plan(rng, layout, rank, shape, &r);
    size_t n = tfr_numel(r.root_rank, r.root_shape);
    tf_scalar *root_vals = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++)
        root_vals[i] = tfr_random_value(rng, dtype, gen);
    build_input(in, rng, engine, dtype, rank, shape, layout, &r, root_vals);
    free(root_vals);
}

/*
 * Storage values that make the view show `vals`: each view element is
 * written to the storage element it addresses (views with stride 0 address
 * one storage element many times, so their layouts fall back to dense).
 */
void tfr_input_from_vals(tfr_input *in, tfr_rng *rng, tf_engine *engine, tf_dtype dtype,
                         size_t rank, const int64_t *shape, tfr_layout layout,
                         const tf_scalar *vals)
{
    if (layout == TFR_BROADCAST || layout == TFR_STRIDE0)
        layout = TFR_DENSE;
    recipe r;
    plan(rng, layout, rank, shape, &r);
    size_t n_root = tfr_numel(r.root_rank, r.root_shape);
    tf_scalar *root_vals = tfr_vals_alloc(n_root);
    for (size_t i = 0; i < n_root; i++)
        root_vals[i] = tfr_sentinel(dtype);
    /* Find where each view element lives by cutting the view from a probe. */
    tf_tensor *probe = tfr_host(dtype, r.root_rank, r.root_shape, root_vals);
    tf_tensor *view = cut_view(probe, layout, rank, shape, &r);
    const int64_t *strides = tf_tensor_strides(view);
    int64_t idx[TF_MAX_RANK] = {0};
    size_t n = tfr_numel(rank, shape);
    for (size_t i = 0; i < n; i++) {
        int64_t off = tf_tensor_offset(view);
        for (size_t k = 0; k < rank; k++)
            off += idx[k] * strides[k];
        root_vals[off] = vals[i];
        tfr_index_next(rank, shape, idx);
    }
    tf_tensor_release(view);
    tf_tensor_release(probe);
    build_input(in, rng, engine, dtype, rank, shape, layout, &r, root_vals);
    free(root_vals);
    tfr_check("input values", dtype, n, in->vals, vals, NULL, (tfr_tol){0.0, 0.0});
}

void tfr_input_free(tfr_input *in)
{
    tf_tensor_release(in->t);
    free(in->vals);
    in->t = NULL;
    in->vals = NULL;
}


tf_tensor *tfr_engine_tensor(tf_engine *engine, tf_dtype dtype, size_t rank, const int64_t *shape,
                             const tf_scalar *vals)
{
    tf_tensor *host = tfr_host(dtype, rank, shape, vals);
    tf_tensor *dev = NULL;
    TF_ASSERT_OK(tf_engine_upload(engine, host, &dev));
    tf_tensor_release(host);
    return dev;
}

tf_tensor *tfr_output(tf_engine *engine, tf_dtype dtype, size_t rank, const int64_t *shape)
{
    size_t n = tfr_numel(rank, shape);
    tf_scalar *vals = tfr_vals_alloc(n);
    for (size_t i = 0; i < n; i++)
        vals[i] = tfr_sentinel(dtype);
    tf_tensor *t = tfr_engine_tensor(engine, dtype, rank, shape, vals);
    free(vals);
    return t;
}

/* ---- strided outputs ---- */

const char *tfr_out_layout_name(tfr_out_layout layout)
{
    static const char *names[] = {"diagonal", "reversed", "stepped", "transposed", "repeated"};
    return layout < TFR_OUT_LAYOUT_COUNT_ ? names[layout] : "?";
}

static tf_tensor *out_view(tf_tensor *root, size_t rank, const int64_t *shape,
                           tfr_out_layout layout, const int *perm, const int64_t *view_strides)
{
    tf_tensor *v = NULL;
    int axes[TF_MAX_RANK];
    int64_t start[TF_MAX_RANK], limit[TF_MAX_RANK], step[TF_MAX_RANK];
    tf_status st = TF_OK;
    switch (layout) {
    case TFR_OUT_DIAGONAL: st = tf_tensor_diagonal(root, (int)rank - 1, (int)rank, &v); break;
    case TFR_OUT_REVERSED:
        for (size_t k = 0; k < rank; k++)
            axes[k] = (int)k;
        st = tf_tensor_reverse(root, rank, axes, &v);
        break;
    case TFR_OUT_STEPPED:
        for (size_t k = 0; k < rank; k++) {
            start[k] = 1;
            step[k] = 2;
            limit[k] = shape[k] ? 2 * shape[k] : 1;
        }
        st = tf_tensor_slice(root, start, limit, step, &v);
        break;
    case TFR_OUT_TRANSPOSED: st = tf_tensor_transpose(root, perm, &v); break;
    default: st = tf_tensor_view(root, rank, shape, view_strides, 0, &v); break;
    }
    if (st != TF_OK)
        fail_msg("building a %s output view: %s: %s", tfr_out_layout_name(layout),
                 tf_status_name(st), tf_error_message());
    return v;
}

void tfr_strided_output(tfr_rng *rng, tf_engine *engine, tf_dtype dtype, size_t rank,
                        const int64_t *shape, tfr_out_layout layout, tf_tensor **root,
                        tf_tensor **view)
{
    int64_t rs[TF_MAX_RANK + 1] = {0}, vs[TF_MAX_RANK] = {0}, stride = 1;
    int perm[TF_MAX_RANK];
    size_t rr = rank;
    if (layout == TFR_OUT_DIAGONAL && rank == 0)
        layout = TFR_OUT_REVERSED; /* no axis to put a diagonal on */
    tfr_rng_perm(rng, rank, perm);
    for (size_t k = 0; k < rank; k++) {
        rs[k] = shape[k];
        if (layout == TFR_OUT_STEPPED)
            rs[k] = 2 * shape[k] + 1 + tfr_rng_int(rng, 0, 1);
        if (layout == TFR_OUT_REPEATED && shape[k] > 1 && tfr_rng_chance(rng, 50))
            rs[k] = 1;
        vs[k] = rs[k] == shape[k] ? stride : 0;
        stride *= rs[k];
    }
    if (layout == TFR_OUT_TRANSPOSED) /* view axis k is root axis perm[k] */
        for (size_t k = 0; k < rank; k++)
            rs[perm[k]] = shape[k];
    if (layout == TFR_OUT_DIAGONAL) { /* a possibly non-square block; diagonal = shape[-1] */
        rs[rank - 1] = shape[rank - 1] + tfr_rng_int(rng, 0, 2);
        rs[rr++] = shape[rank - 1];
    }
    *root = tfr_output(engine, dtype, rr, rs);
    *view = out_view(*root, rank, shape, layout, perm, vs);
    char a[96], b[96];
    if (tf_tensor_rank(*view) != rank ||
        (rank && memcmp(tf_tensor_shape(*view), shape, rank * sizeof *shape) != 0))
        fail_msg("%s output view has shape %s, wanted %s", tfr_out_layout_name(layout),
                 tfr_shape_str(tf_tensor_rank(*view), tf_tensor_shape(*view), a, sizeof a),
                 tfr_shape_str(rank, shape, b, sizeof b));
}

void tfr_check_strided_write_(const char *file, int line, const char *what, const tf_tensor *root,
                              const tf_tensor *view, const tf_scalar *vals)
{
    tf_dtype dtype = tf_tensor_dtype(root);
    size_t n_root = tf_tensor_numel(root), n = tf_tensor_numel(view), rank = tf_tensor_rank(view);
    const int64_t *strides = tf_tensor_strides(view);
    tf_scalar *want = tfr_vals_alloc(n_root);
    tf_scalar *got = tfr_read(root);
    int64_t idx[TF_MAX_RANK] = {0};
    for (size_t i = 0; i < n_root; i++)
        want[i] = tfr_sentinel(dtype);
    for (size_t i = 0; i < n; i++) {
        int64_t off = tf_tensor_offset(view);
        for (size_t k = 0; k < rank; k++)
            off += idx[k] * strides[k];
        want[off] = tfr_norm(dtype, vals[i]);
        tfr_index_next(rank, tf_tensor_shape(view), idx);
    }
    tfr_check_(file, line, what, dtype, n_root, got, want, NULL, tfr_tol_default(dtype));
    free(want);
    free(got);
}

/* ---- engines ---- */

const uint32_t tfr_float_unary_ops[18] = {
    TF_UNARY_NEG,    TF_UNARY_ABS,   TF_UNARY_SIGN, TF_UNARY_EXP,     TF_UNARY_LOG,
    TF_UNARY_EXPM1,  TF_UNARY_LOG1P, TF_UNARY_SIN,  TF_UNARY_COS,     TF_UNARY_TANH,
    TF_UNARY_SQRT,   TF_UNARY_RSQRT, TF_UNARY_ERF,  TF_UNARY_SIGMOID, TF_UNARY_RECIPROCAL,
    TF_UNARY_SQUARE, TF_UNARY_FLOOR, TF_UNARY_CEIL};
const uint32_t tfr_float_binary_ops[8] = {TF_BINARY_ADD, TF_BINARY_SUB, TF_BINARY_MUL,
                                          TF_BINARY_DIV, TF_BINARY_POW, TF_BINARY_MAX,
                                          TF_BINARY_MIN, TF_BINARY_REM};
_Static_assert(TF_UNARY_COUNT_ == 23 && TF_BINARY_COUNT_ == 12, /* 19.. and 11: complex only */
               "a new op: add it to tfr_float_unary_ops / tfr_float_binary_ops if it is float");

void tfr_fused_run_outputs(tf_engine *engine, uint32_t n_in, uint32_t n_steps,
                           const tf_fused_step *steps, uint32_t n_out, const uint32_t *outputs,
                           tf_tensor *const *in, tf_dtype dtype, size_t rank, const int64_t *shape,
                           tf_tensor **out)
{
    tf_tensor *reg[TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_STEPS];
    for (uint32_t r = 0; r < n_in; r++)
        reg[r] = in[r];
    for (uint32_t k = 0; k < n_steps; k++) {
        const tf_fused_step *st = &steps[k];
        tf_tensor *args[2] = {reg[st->a], reg[st->b]};
        reg[n_in + k] = tfr_output(engine, dtype, rank, shape);
        if (st->kind == TF_FUSED_UNARY) {
            tf_unary_params up = {sizeof up, st->op};
            tfr_exec_ok("reference unary step", engine, TF_PRIM_UNARY, &up, 1, args, 1,
                        &reg[n_in + k]);
        } else {
            tf_binary_params bp = {sizeof bp, st->op};
            tfr_exec_ok("reference binary step", engine, TF_PRIM_BINARY, &bp, 2, args, 1,
                        &reg[n_in + k]);
        }
    }
    for (uint32_t i = 0; i < n_out; i++) {
        out[i] = reg[n_in + (n_out > 1 ? outputs[i] : n_steps - 1)];
        tf_tensor_retain(out[i]);
    }
    for (uint32_t k = 0; k < n_steps; k++)
        tf_tensor_release(reg[n_in + k]);
}

tf_tensor *tfr_fused_run_steps(tf_engine *engine, uint32_t n_in, uint32_t n_steps,
                               const tf_fused_step *steps, tf_tensor *const *in, tf_dtype dtype,
                               size_t rank, const int64_t *shape)
{
    tf_tensor *out;
    tfr_fused_run_outputs(engine, n_in, n_steps, steps, 1, NULL, in, dtype, rank, shape, &out);
    return out;
}

const char *tfr_fused_describe(uint32_t n_in, uint32_t n_steps, const tf_fused_step *steps,
                               char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "%u inputs:", n_in);
    for (uint32_t k = 0; k < n_steps && used < size; k++) {
        const tf_fused_step *s = &steps[k];
        tf_prim sub = s->kind == TF_FUSED_UNARY ? TF_PRIM_UNARY : TF_PRIM_BINARY;
        used += (size_t)snprintf(buf + used, size - used, " r%u=%s(r%u%s", n_in + k,
                                 tf_prim_op_name(sub, s->op), s->a,
                                 sub == TF_PRIM_BINARY ? "," : ")");
        if (sub == TF_PRIM_BINARY && used < size)
            used += (size_t)snprintf(buf + used, size - used, "r%u)", s->b);
    }
    return buf;
}

tf_status tfr_engine_create(const char *name, int threads, const char *key, const char *value,
                            tf_engine **out)
{
    tf_plugin *plugin = NULL;
    tf_status st = tf_plugin_load(name, &plugin);
    if (st != TF_OK)
        return st;
    const char *keys[1] = {key}, *values[1] = {value};
    tf_engine_options opt;
    memset(&opt, 0, sizeof opt);
    opt.struct_size = sizeof opt;
    opt.threads = threads;
    opt.n_extra = key != NULL ? 1 : 0;
    opt.extra_keys = keys;
    opt.extra_values = values;
    return tf_engine_create(plugin, &opt, out);
}

tf_engine *tfr_engine_open(const char *name, int threads)
{
    tf_engine *e = NULL;
    TF_ASSERT_OK(tf_engine_open(name, threads, &e));
    return e;
}

int tfr_engines_open(const char *name, const int *threads, tf_engine **const *engines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (tf_engine_open(name, threads[i], engines[i]) != TF_OK) {
            print_error("opening the %s engine (threads %d): %s (cause: %s)\n", name, threads[i],
                        tf_error_message(), tf_error_cause());
            tfr_engines_destroy(engines, i);
            return -1;
        }
    }
    return 0;
}

int tfr_engines_destroy(tf_engine **const *engines, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tf_engine_destroy(*engines[i]);
        *engines[i] = NULL;
    }
    return 0;
}

void tfr_exec_ok_(const char *file, int line, const char *what, tf_engine *engine, tf_prim prim,
                  const void *params, size_t n_in, tf_tensor *const *in, size_t n_out,
                  tf_tensor *const *out)
{
    tf_status st = tf_engine_execute(engine, prim, params, n_in, in, n_out, out);
    if (st == TF_OK)
        return;
    print_error("%s: tf_engine_execute(%s) -> %s: %s (cause: %s)\n", what, tf_prim_name(prim),
                tf_status_name(st), tf_error_message(), tf_error_cause());
    _fail(file, line);
}

/* Mostly one of the newest registers (deep chains), else any (inputs read late,
   registers that stay alive across many steps). */
static uint32_t pick_register(tfr_rng *rng, uint32_t regs)
{
    if (tfr_rng_chance(rng, 60))
        return regs - 1 - (uint32_t)tfr_rng_int(rng, 0, regs > 1 ? 1 : 0);
    return (uint32_t)tfr_rng_int(rng, 0, regs - 1);
}

void tfr_fused_random_steps(tfr_rng *rng, uint32_t n_in, uint32_t n_steps, tf_fused_step *steps)
{
    for (uint32_t k = 0; k < n_steps; k++) {
        tf_fused_step *st = &steps[k];
        uint32_t regs = n_in + k;
        const int64_t n_unary = sizeof tfr_float_unary_ops / sizeof tfr_float_unary_ops[0];
        const int64_t n_binary = sizeof tfr_float_binary_ops / sizeof tfr_float_binary_ops[0];
        if (tfr_rng_chance(rng, 45)) {
            *st = (tf_fused_step){TF_FUSED_UNARY,
                                  tfr_float_unary_ops[tfr_rng_int(rng, 0, n_unary - 1)],
                                  pick_register(rng, regs), 0};
        } else {
            *st = (tf_fused_step){TF_FUSED_BINARY,
                                  tfr_float_binary_ops[tfr_rng_int(rng, 0, n_binary - 1)],
                                  pick_register(rng, regs), pick_register(rng, regs)};
        }
    }
}

void tfr_expect_reject_(const char *file, int line, tf_engine *engine, const char *what,
                        tf_prim prim, const void *params, size_t n_in, tf_tensor *const *in,
                        size_t n_out, tf_tensor *const *out, tf_status expected)
{
    tf_scalar *before[TF_FUSED_MAX_OUTPUTS + 1];
    for (size_t k = 0; k < n_out; k++)
        before[k] = tfr_read(out[k]);
    tf_error_clear();
    tf_status st = tf_engine_execute(engine, prim, params, n_in, in, n_out, out);
    if (st != expected) {
        print_error("%s: got %s, want %s (%s)\n", what, tf_status_name(st),
                    tf_status_name(expected), tf_error_message());
        _fail(file, line);
    }
    if (tf_error_status() != expected || tf_error_message()[0] == '\0') {
        print_error("%s: error slot holds %s with message \"%s\"\n", what,
                    tf_status_name(tf_error_status()), tf_error_message());
        _fail(file, line);
    }
    for (size_t k = 0; k < n_out; k++) {
        tf_scalar *after = tfr_read(out[k]);
        tfr_check_(file, line, what, tf_tensor_dtype(out[k]), tf_tensor_numel(out[k]), after,
                   before[k], NULL, (tfr_tol){0, 0});
        free(after);
        free(before[k]);
    }
}

int tfr_same_bits(tf_dtype dtype, double got, double want)
{
    if (isnan(got) && isnan(want))
        return 1;
    if (dtype == TF_F32) {
        float g = (float)got, w = (float)want;
        return memcmp(&g, &w, sizeof g) == 0;
    }
    return memcmp(&got, &want, sizeof got) == 0;
}

void tfr_check_same_bits(const char *what, tf_dtype dtype, size_t n, const tf_scalar *got,
                         const tf_scalar *want)
{
    for (size_t i = 0; i < n; i++)
        if (!tfr_same_bits(dtype, got[i].f, want[i].f))
            fail_msg("%s: element %zu of %zu: got %.17g, reference %.17g", what, i, n, got[i].f,
                     want[i].f);
}
