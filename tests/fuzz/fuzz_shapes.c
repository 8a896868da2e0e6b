/*
 * fuzz_shapes.c - shape, stride and broadcast validation.
 *
 * The input decodes into a few host tensors (any dtype code, rank, extents,
 * including negative and overflowing ones), views of them (explicit
 * strides, offsets, reshape, transpose, slice, broadcast, reverse,
 * diagonal) and eager ops on the CPU engine whose shape inference the
 * parameters stress (broadcasting binaries, dot_general dimension numbers,
 * reduction axes, slices, pads, concatenation). Every call must either
 * succeed with a result that agrees with what was asked, or refuse with a
 * validation-kind status and leave the out-parameter alone. A successful
 * result is read back in full (copy_to_host), so a view that reaches
 * outside its storage is an ASan report. Tensors stay tiny: an input only
 * gets data when it has at most MAX_NUMEL elements, and a call whose valid
 * result would be larger than that (but allocatable) is not made.
 *
 * Float inputs may be variables: then every op that succeeded is also
 * differentiated (issue 19, item 11: a pad the forward accepted at the
 * int64 extremes failed in its reverse rule). The reverse and forward
 * rules of an op must work wherever the forward did: grad_optional and
 * jvp_optional of the sum of the result succeed (or run out of memory),
 * with a gradient of the variable's shape. tril, triu and dynamic_slice
 * join the ops, their k and sizes at the int64 extremes too.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/ops.h>
#include <tenferro/runtime.h>
#include <tenferro/tenferro.h>

#include "fuzz_common.h"

#define MAX_NUMEL 64
#define MAX_READ 4096
/* Results below this many elements but above MAX_READ would be real (and
   slow) allocations; above it the library must refuse without allocating. */
#define HUGE_NUMEL ((int64_t)1 << 41)
#define N_TENSORS 3
#define MAX_EAGER 256

static tf_runtime *g_rt;
static tf_engine *g_engine;
static tf_session *g_s;
static double g_buf[2 * MAX_READ]; /* MAX_READ elements of c128, the widest dtype */

static void setup(void)
{
    fz_setup_environment();
    FZ_CHECK(tf_engine_open("cpu", 1, &g_engine) == TF_OK, "engine: %s: %s", tf_error_message(),
             tf_error_cause());
    FZ_CHECK(tf_runtime_create(&g_rt) == TF_OK, "runtime: %s", tf_error_message());
    FZ_CHECK(tf_session_begin(g_rt, g_engine, &g_s) == TF_OK, "session: %s", tf_error_message());
}

/* ---- outcome checks ---- */

/* A refusal must be one of the argument-checking kinds, never an engine failure. */
static void check_refusal(const char *what, tf_status st)
{
    FZ_CHECK(st == TF_ERR_VALIDATION || st == TF_ERR_DTYPE_MISMATCH ||
                 st == TF_ERR_SHAPE_MISMATCH || st == TF_ERR_AXIS_OUT_OF_BOUNDS ||
                 st == TF_ERR_OUT_OF_MEMORY || st == TF_ERR_ELEMENT_COUNT ||
                 st == TF_ERR_SHAPE_OVERFLOW || st == TF_ERR_RANK_TOO_LARGE ||
                 st == TF_ERR_NOT_CONTIGUOUS || st == TF_ERR_OUT_OF_RANGE ||
                 st == TF_ERR_UNSUPPORTED,
             "%s: unexpected status %s: %s", what, tf_status_name(st), tf_error_message());
    FZ_CHECK(tf_error_message()[0] != '\0', "%s: %s without a message", what, tf_status_name(st));
}

/*
 * Element count of a shape; -1 when an extent is negative or the product
 * overflows. A zero extent makes the count 0 whatever the others are (the
 * tensor is empty; [3, 2^62 + 1, 0] is a valid shape).
 */
static int64_t numel_of(size_t rank, const int64_t *shape)
{
    int64_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return -1;
        if (shape[i] == 0)
            n = 0;
    }
    for (size_t i = 0; i < rank && n; i++)
        if (__builtin_mul_overflow(n, shape[i], &n))
            return -1;
    return n;
}

/* Whether a valid result of n elements is too big to make here (but not to refuse). */
static int too_big(int64_t n)
{
    return n > MAX_READ && n < HUGE_NUMEL;
}

/* A tensor the library made: consistent accessors, and every element readable. */
static void check_tensor(const char *what, const tf_tensor *t)
{
    size_t rank = tf_tensor_rank(t);
    FZ_CHECK(rank <= TF_MAX_RANK, "%s: rank %zu", what, rank);
    int64_t n = numel_of(rank, tf_tensor_shape(t));
    FZ_CHECK(n >= 0 && (size_t)n == tf_tensor_numel(t), "%s: numel %zu vs shape product %lld", what,
             tf_tensor_numel(t), (long long)n);
    if (n <= MAX_READ && tf_tensor_is_host_accessible(t)) {
        tf_status st = tf_tensor_copy_to_host(t, tf_tensor_dtype(t), g_buf, (size_t)n);
        FZ_CHECK(st == TF_OK, "%s: copy_to_host: %s", what, tf_error_message());
    }
}

/* ---- decoding ---- */

typedef struct shape_spec {
    size_t rank;
    int64_t shape[TF_MAX_RANK + 1];
} shape_spec;

static void read_shape(fz_reader *r, shape_spec *sp, size_t max_rank)
{
    sp->rank = fz_below(r, (uint32_t)max_rank + 1);
    for (size_t i = 0; i < sp->rank; i++)
        sp->shape[i] = fz_extent(r);
}

static int read_axis(fz_reader *r)
{
    uint8_t b = fz_u8(r);
    if (b >= 250)
        return b == 255 ? 2147483647 : -2147483647 - 1;
    return (int)(b % 20) - 10;
}

/* ---- host tensors ---- */

static tf_tensor *make_host(fz_reader *r)
{
    uint8_t d = fz_u8(r);
    tf_dtype dtype = (tf_dtype)(d < 240 ? d % TF_DTYPE_COUNT : d); /* a few bad codes */
    shape_spec sp;
    read_shape(r, &sp, TF_MAX_RANK + 1);
    int64_t n = numel_of(sp.rank, sp.shape);
    size_t count = n >= 0 && n <= MAX_NUMEL ? (size_t)n : fz_below(r, MAX_NUMEL + 1);
    if (fz_u8(r) == 255)
        count = (count + 1) % (MAX_NUMEL + 1); /* a count that does not match */
    static unsigned char data[MAX_NUMEL * 16]; /* 16: c128, the widest dtype */
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i % 2); /* valid in every dtype, bool included */
    int ok = dtype >= 0 && dtype < TF_DTYPE_COUNT && sp.rank <= TF_MAX_RANK && n >= 0 &&
             (size_t)n == count;
    tf_tensor *t = (tf_tensor *)g_buf;
    tf_status st = tf_tensor_from_host(dtype, sp.rank, sp.shape, data, count, &t);
    if (st) {
        FZ_CHECK(t == (tf_tensor *)g_buf, "from_host wrote its out-parameter on failure");
        FZ_CHECK(!ok, "from_host refused a valid tensor: %s", tf_error_message());
        check_refusal("from_host", st);
        return NULL;
    }
    FZ_CHECK(ok, "from_host accepted an invalid tensor (dtype %d, rank %zu, count %zu)", dtype,
             sp.rank, count);
    FZ_CHECK(tf_tensor_is_contiguous(t), "a fresh tensor is not contiguous");
    check_tensor("from_host", t);
    return t;
}

/*
 * An explicit view of a fresh tensor of `storage` elements: valid exactly
 * when every addressable element lies in the storage (no elements: any
 * verdict but a crash).
 */
static tf_tensor *make_view(fz_reader *r, tf_tensor *base)
{
    shape_spec sp;
    read_shape(r, &sp, TF_MAX_RANK + 1);
    int64_t strides[TF_MAX_RANK + 1], offset = fz_extent(r);
    for (size_t i = 0; i < sp.rank; i++)
        strides[i] = fz_u8(r) < 200 ? (int64_t)(fz_u8(r) % 9) - 4 : fz_extent(r);
    int use_strides = fz_u8(r) < 224;
    int64_t storage = (int64_t)tf_tensor_numel(base), n = numel_of(sp.rank, sp.shape);
    /* lowest and highest element addressed, in __int128 so nothing overflows here */
    __int128 lo = offset, hi = offset;
    int64_t contiguous = 1;
    for (size_t i = 0; i < sp.rank && n > 0; i++) {
        __int128 stride = use_strides ? strides[i] : contiguous;
        __int128 span = (__int128)(sp.shape[i] - 1) * stride;
        if (span < 0)
            lo += span;
        else
            hi += span;
        contiguous *= sp.shape[i]; /* n > 0 and no overflow: every extent >= 1 */
    }
    /* byte offsets are int64_t: the shape's byte size must fit (SHAPE_OVERFLOW) */
    int64_t max_numel = INT64_MAX / (int64_t)tf_dtype_size(tf_tensor_dtype(base));
    int valid = sp.rank <= TF_MAX_RANK && n >= 0 && n <= max_numel && lo >= 0 && hi < storage;
    tf_tensor *v = NULL;
    tf_status st =
        tf_tensor_view(base, sp.rank, sp.shape, use_strides ? strides : NULL, offset, &v);
    if (st) {
        FZ_CHECK(v == NULL, "view wrote its out-parameter on failure");
        FZ_CHECK(!valid || n == 0, "view refused a view inside the storage: %s",
                 tf_error_message());
        check_refusal("view", st);
        return NULL;
    }
    FZ_CHECK(valid || n == 0, "view accepted elements outside the storage (offset %lld)",
             (long long)offset);
    FZ_CHECK(tf_tensor_rank(v) == sp.rank, "view rank");
    for (size_t i = 0; i < sp.rank; i++)
        FZ_CHECK(tf_tensor_shape(v)[i] == sp.shape[i], "view extent %zu", i);
    if (use_strides && n > 0) {
        for (size_t i = 0; i < sp.rank; i++)
            FZ_CHECK(sp.shape[i] == 1 || tf_tensor_strides(v)[i] == strides[i], "view stride %zu",
                     i);
        FZ_CHECK(tf_tensor_offset(v) == offset, "view offset");
    }
    check_tensor("view", v);
    return v;
}

/* One tensor-level view op on t; returns the result (or NULL). */
static tf_tensor *view_op(fz_reader *r, tf_tensor *t)
{
    size_t rank = tf_tensor_rank(t);
    tf_tensor *out = NULL;
    tf_status st;
    const char *what;
    int64_t a[TF_MAX_RANK + 1], b[TF_MAX_RANK + 1], c[TF_MAX_RANK + 1];
    int axes[TF_MAX_RANK + 1];
    switch (fz_u8(r) % 6) {
    case 0: {
        what = "reshape";
        shape_spec sp;
        read_shape(r, &sp, TF_MAX_RANK + 1);
        st = tf_tensor_reshape(t, sp.rank, sp.shape, &out);
        if (!st)
            FZ_CHECK(tf_tensor_numel(out) == tf_tensor_numel(t), "reshape changed numel");
        break;
    }
    case 1:
        what = "transpose";
        for (size_t i = 0; i < rank; i++)
            axes[i] = fz_u8(r) < 240 ? (int)fz_below(r, (uint32_t)rank) : read_axis(r);
        st = tf_tensor_transpose(t, axes, &out);
        break;
    case 2:
        what = "slice";
        for (size_t i = 0; i < rank; i++) {
            a[i] = fz_extent(r);
            b[i] = fz_extent(r);
            c[i] = fz_extent(r);
        }
        st = tf_tensor_slice(t, a, b, c, &out);
        break;
    case 3: {
        what = "broadcast_in_dim";
        shape_spec sp;
        read_shape(r, &sp, TF_MAX_RANK + 1);
        for (size_t i = 0; i < rank; i++)
            axes[i] = read_axis(r);
        int64_t n = numel_of(sp.rank, sp.shape);
        if (n >= 0 && too_big(n))
            return NULL;
        st = tf_tensor_broadcast_in_dim(t, sp.rank, sp.shape, axes, &out);
        if (!st)
            for (size_t i = 0; i < sp.rank; i++)
                FZ_CHECK(tf_tensor_shape(out)[i] == sp.shape[i], "broadcast extent %zu", i);
        break;
    }
    case 4: {
        what = "reverse";
        size_t n = fz_below(r, TF_MAX_RANK + 2);
        for (size_t i = 0; i < n; i++)
            axes[i] = read_axis(r);
        st = tf_tensor_reverse(t, n, axes, &out);
        break;
    }
    default:
        what = "diagonal";
        st = tf_tensor_diagonal(t, read_axis(r), read_axis(r), &out);
        break;
    }
    if (st) {
        FZ_CHECK(out == NULL, "%s wrote its out-parameter on failure", what);
        check_refusal(what, st);
        return NULL;
    }
    check_tensor(what, out);
    return out;
}

/* ---- eager ops: shape inference on the CPU engine ---- */

static void read_dot_dims(fz_reader *r, tf_dot_dims *d)
{
    memset(d, 0, sizeof *d);
    d->n_contracting = fz_u8(r) < 240 ? fz_below(r, 3) : fz_below(r, 12);
    d->n_batch = fz_u8(r) < 240 ? fz_below(r, 3) : fz_below(r, 12);
    for (int i = 0; i < TF_MAX_RANK; i++) {
        d->lhs_contracting[i] = read_axis(r);
        d->rhs_contracting[i] = read_axis(r);
        d->lhs_batch[i] = read_axis(r);
        d->rhs_batch[i] = read_axis(r);
    }
}

/* The pad result's element count; -1 when some extent is negative or it overflows. */
static int64_t pad_numel(const tf_tensor *t, const int64_t *lo, const int64_t *hi,
                         const int64_t *in)
{
    __int128 n = 1;
    for (size_t i = 0; i < tf_tensor_rank(t); i++) {
        __int128 d = tf_tensor_shape(t)[i];
        __int128 e =
            d == 0 ? (__int128)lo[i] + hi[i] : (__int128)lo[i] + d + (d - 1) * in[i] + hi[i];
        if (e < 0 || in[i] < 0 || e > INT64_MAX)
            return -1;
        if (e == 0)
            return 0;
        n *= e; /* both <= INT64_MAX: fits */
        if (n > INT64_MAX)
            return -1;
    }
    return (int64_t)n;
}

/*
 * The element count of x's extents except those on the listed axes (negative
 * ones counted from the end), or -1 if it overflows: the size of a reduction's
 * result, or of a dot_general operand's free part. An empty input with huge
 * extents can ask for a huge valid result this way.
 */
static int64_t kept_numel(tf_eager *x, const int *axes, size_t n, const int *also, size_t n_also)
{
    const tf_tensor *t = tf_eager_value(x);
    size_t rank = tf_tensor_rank(t);
    __int128 p = 1;
    for (size_t d = 0; d < rank; d++) {
        int skip = 0;
        for (size_t i = 0; i < n; i++)
            skip |= axes[i] == (int)d || (axes[i] < 0 && axes[i] + (int64_t)rank == (int64_t)d);
        for (size_t i = 0; i < n_also; i++)
            skip |= also[i] == (int)d || (also[i] < 0 && also[i] + (int64_t)rank == (int64_t)d);
        if (!skip)
            p *= tf_tensor_shape(t)[d];
        if (p > INT64_MAX)
            return -1;
    }
    return (int64_t)p;
}

static int dot_too_big(tf_eager *x, tf_eager *y, const tf_dot_dims *d)
{
    size_t nc = d->n_contracting <= TF_MAX_RANK ? d->n_contracting : TF_MAX_RANK;
    size_t nb = d->n_batch <= TF_MAX_RANK ? d->n_batch : TF_MAX_RANK;
    int64_t a = kept_numel(x, d->lhs_contracting, nc, NULL, 0);
    int64_t b = kept_numel(y, d->rhs_contracting, nc, d->rhs_batch, nb);
    __int128 n = (__int128)a * b;
    return a >= 0 && b >= 0 && n > MAX_READ && n < HUGE_NUMEL;
}

/* Whether two statuses of a derivative are the only acceptable ones. */
static void check_derivative(const char *what, const char *mode, tf_status st)
{
    FZ_CHECK(st == TF_OK || st == TF_ERR_OUT_OF_MEMORY,
             "%s: the forward succeeded but its %s failed: %s: %s", what, mode,
             tf_status_name(st), tf_error_message());
}

/*
 * The rules of the op that made `out` from the variable x, through the sum
 * of out: the gradient (reverse rules) has x's shape, the forward derivative
 * along x itself (forward rules) is a scalar. Skipped when x is not a
 * variable, the result is not a float or too large to sum cheaply.
 */
static void check_rules(const char *what, tf_eager *out, tf_eager *x)
{
    const tf_tensor *v = tf_eager_value(out), *xv = tf_eager_value(x);
    tf_dtype d = tf_tensor_dtype(v);
    if (!tf_eager_tracks_grad(x) || !tf_eager_tracks_grad(out) || (d != TF_F32 && d != TF_F64) ||
        tf_tensor_numel(v) > MAX_READ)
        return;
    tf_eager *l = NULL, *g = NULL, *j = NULL;
    tf_status st = tf_session_reduce_sum(g_s, out, NULL, 0, &l);
    check_derivative(what, "sum", st);
    if (st)
        return;
    check_derivative(what, "reverse rule", st = tf_runtime_grad_optional(g_rt, g_engine, l, x, &g));
    if (!st && g) {
        const tf_tensor *gv = tf_eager_value(g);
        FZ_CHECK(tf_tensor_rank(gv) == tf_tensor_rank(xv) &&
                     memcmp(tf_tensor_shape(gv), tf_tensor_shape(xv),
                            tf_tensor_rank(xv) * sizeof(int64_t)) == 0,
                 "%s: the gradient's shape is not the variable's", what);
        check_tensor(what, gv);
    }
    check_derivative(what, "forward rule", tf_runtime_jvp_optional(g_rt, g_engine, l, x, x, &j));
    if (j)
        check_tensor(what, tf_eager_value(j));
    tf_eager_release(j);
    tf_eager_release(g);
    tf_eager_release(l);
}

/* An int64 attribute: fz_extent's values, or the extremes themselves. */
static int64_t read_attr(fz_reader *r)
{
    uint8_t b = fz_u8(r);
    static const int64_t edges[] = {INT64_MIN, INT64_MIN + 1, -INT64_MAX + 5, INT64_MAX - 5,
                                    INT64_MAX - 1, INT64_MAX};
    return b < 240 ? fz_extent(r) : edges[b % 6];
}

/*
 * tril/triu with any k, or a dynamic_slice with any sizes and i64 starts,
 * into *st; false when the call is not made (its valid result would be too
 * big here).
 */
static bool attr_op(fz_reader *r, tf_eager *x, const char **what, tf_eager **out, tf_status *st)
{
    size_t rank = tf_tensor_rank(tf_eager_value(x));
    uint8_t k = fz_u8(r) % 3;
    if (k < 2) {
        *what = k ? "triu" : "tril";
        int64_t kk = read_attr(r);
        if (too_big((int64_t)tf_tensor_numel(tf_eager_value(x))))
            return false; /* a dense result of x's size (x may be a broadcast view) */
        *st = k ? tf_session_triu(g_s, x, kk, out) : tf_session_tril(g_s, x, kk, out);
        return true;
    }
    *what = "dynamic_slice";
    int64_t sizes[TF_MAX_RANK], starts[TF_MAX_RANK];
    for (size_t i = 0; i < rank; i++) {
        sizes[i] = read_attr(r);
        starts[i] = read_attr(r);
    }
    if (too_big(numel_of(rank, sizes)))
        return false;
    const int64_t n = (int64_t)rank;
    tf_tensor *host = NULL;
    tf_eager *at = NULL;
    FZ_CHECK(tf_tensor_from_host(TF_I64, 1, &n, starts, rank, &host) == TF_OK &&
                 tf_session_constant_from_host(g_s, host, &at) == TF_OK,
             "dynamic_slice starts: %s", tf_error_message());
    tf_tensor_release(host);
    *st = tf_session_dynamic_slice(g_s, x, at, sizes, out);
    tf_eager_release(at);
    return true;
}

static void eager_op(fz_reader *r, tf_eager **xs, size_t n_xs)
{
    tf_eager *x = xs[fz_below(r, (uint32_t)n_xs)], *y = xs[fz_below(r, (uint32_t)n_xs)];
    size_t rank = tf_tensor_rank(tf_eager_value(x));
    tf_eager *out = NULL;
    tf_status st;
    const char *what;
    int axes[TF_MAX_RANK + 2];
    int64_t a[TF_MAX_RANK], b[TF_MAX_RANK], c[TF_MAX_RANK];
    switch (fz_u8(r) % 11) {
    case 10:
        if (!attr_op(r, x, &what, &out, &st))
            return;
        break;
    case 0:
        what = "add";
        st = tf_session_add(g_s, x, y, &out);
        break;
    case 1:
        what = "maximum";
        st = tf_session_maximum(g_s, x, y, &out);
        break;
    case 2: {
        what = "dot_general";
        tf_dot_dims d;
        read_dot_dims(r, &d);
        if (dot_too_big(x, y, &d))
            return;
        st = tf_session_dot_general(g_s, x, y, &d, &out);
        break;
    }
    case 3: {
        what = "reduce_sum";
        size_t n = fz_below(r, TF_MAX_RANK + 2);
        for (size_t i = 0; i < n; i++)
            axes[i] = read_axis(r);
        if (too_big(kept_numel(x, axes, n, NULL, 0)))
            return;
        st = fz_u8(r) & 1 ? tf_session_reduce_sum(g_s, x, axes, n, &out)
                          : tf_session_reduce_max(g_s, x, axes, n, &out);
        break;
    }
    case 4:
        what = "slice";
        for (size_t i = 0; i < rank; i++) {
            a[i] = fz_extent(r);
            b[i] = fz_extent(r);
            c[i] = fz_extent(r);
        }
        st = tf_session_slice(g_s, x, a, b, c, &out);
        break;
    case 5:
        what = "pad";
        for (size_t i = 0; i < rank; i++) {
            a[i] = read_attr(r);
            b[i] = read_attr(r);
            c[i] = read_attr(r);
        }
        if (too_big(pad_numel(tf_eager_value(x), a, b, c)))
            return;
        st = tf_session_pad(g_s, x, a, b, c, 0.5, &out);
        break;
    case 6: {
        what = "concatenate";
        tf_eager *list[4];
        size_t n = fz_below(r, 5);
        for (size_t i = 0; i < n; i++)
            list[i] = xs[fz_below(r, (uint32_t)n_xs)];
        st = tf_session_concatenate(g_s, list, n, read_axis(r), &out);
        break;
    }
    case 7: {
        what = "reshape";
        shape_spec sp;
        read_shape(r, &sp, TF_MAX_RANK + 1);
        st = tf_session_reshape(g_s, x, sp.rank, sp.shape, &out);
        break;
    }
    case 8: {
        what = "broadcast_in_dim";
        shape_spec sp;
        read_shape(r, &sp, TF_MAX_RANK + 1);
        for (size_t i = 0; i < rank; i++)
            axes[i] = read_axis(r);
        int64_t n = numel_of(sp.rank, sp.shape);
        if (n >= 0 && too_big(n))
            return;
        st = tf_session_broadcast_in_dim(g_s, x, sp.rank, sp.shape, axes, &out);
        break;
    }
    default: {
        what = "softmax";
        int axis = read_axis(r);
        /* computed through a max over the axis: an empty x with huge other
           extents asks for a huge (valid) intermediate */
        if (too_big(kept_numel(x, &axis, 1, NULL, 0)))
            return;
        st = tf_session_softmax(g_s, x, axis, &out);
        break;
    }
    }
    if (st) {
        FZ_CHECK(out == NULL, "%s wrote its out-parameter on failure", what);
        check_refusal(what, st);
        return;
    }
    FZ_CHECK(out != NULL, "%s: no result", what);
    check_tensor(what, tf_eager_value(out));
    check_rules(what, out, x);
    check_rules(what, out, y);
    tf_eager_release(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_s)
        setup();
    fz_reader r = {data, size};
    tf_tensor *ts[N_TENSORS * 3];
    size_t nt = 0;
    for (int i = 0; i < N_TENSORS; i++) {
        tf_tensor *t = make_host(&r);
        if (!t)
            continue;
        ts[nt++] = t;
        tf_tensor *v = fz_u8(&r) & 1 ? make_view(&r, t) : NULL;
        if (v)
            ts[nt++] = v;
        tf_tensor *w = view_op(&r, v ? v : t);
        if (w)
            ts[nt++] = w;
    }
    tf_eager *xs[N_TENSORS * 3];
    size_t nx = 0;
    for (size_t i = 0; i < nt; i++) {
        if (tf_tensor_numel(ts[i]) > MAX_EAGER)
            continue; /* keeps outer products and broadcasts of two inputs small */
        tf_eager *x = NULL;
        tf_dtype d = tf_tensor_dtype(ts[i]);
        int var = (d == TF_F32 || d == TF_F64) && (fz_u8(&r) & 1);
        tf_status st = var ? tf_runtime_variable_from(g_rt, ts[i], &x)
                           : tf_session_constant_from_host(g_s, ts[i], &x);
        if (st)
            check_refusal(var ? "variable_from" : "constant_from_host", st);
        else
            xs[nx++] = x;
    }
    for (int k = 0; nx && k < 4 && r.n; k++)
        eager_op(&r, xs, nx);
    for (size_t i = 0; i < nx; i++)
        tf_eager_release(xs[i]);
    for (size_t i = 0; i < nt; i++)
        tf_tensor_release(ts[i]);
    return 0;
}
