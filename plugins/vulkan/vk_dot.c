/*
 * vk_dot.c - DOT_GENERAL as a batched GEMM on the tiled shader gemm.comp.
 *
 * Each operand's axes fall into three groups: for lhs its free axes
 * (ascending), contracting axes and batch axes (in the params' order); for
 * rhs its contracting, free and batch axes. When every group of an operand
 * merges into one (extent, stride) pair - true of dense operands and of
 * most transposes - the shader reads the operand where it is. Otherwise the
 * operand is first materialised by a COPY into a dense temporary laid out
 * [free, contracting, batch] (lhs) or [contracting, free, batch] (rhs); the
 * temporary is freed at once and released when its batch completes. The
 * output is dense [lhs free, rhs free, batch], which is C[M, N, batch].
 * Outputs with one column (N = 1) or one row (M = 1) take the
 * matrix-vector shader gemv.comp instead of the tiled GEMM, whose tiles
 * would be almost all padding there. Otherwise gemm_choose() picks one of
 * the tile shapes gemm.comp is built in, or, for large f32/f64 products
 * whose A is contiguous along M and B along K, the 128 x 128 tile of
 * gemm_big.comp (see there and README.md). Complex operands (c64, c128)
 * take the same paths with complex products; TF_DOT_CONJ_* conjugate an
 * operand's elements as the shader loads them.
 */
#include <string.h>

#include "vk_internal.h"

/* An operand's axes regrouped: the axis list of each group, in order. */
typedef struct dot_side {
    uint32_t axes[3][TF_MAX_RANK];
    uint32_t n[3];
    int64_t ext[3];    /* product of each group's extents */
    int64_t stride[3]; /* the merged stride of each group (when mergeable) */
} dot_side;

static int in_list(const uint32_t *list, uint32_t n, uint32_t a)
{
    for (uint32_t i = 0; i < n; i++) {
        if (list[i] == a)
            return 1;
    }
    return 0;
}

/* Groups: `first`/`second` are which of (free, contracting) come first; batch is last. */
static void side_init(dot_side *s, const tf_operand *op, const uint32_t *contract,
                      const uint32_t *batch, uint32_t nc, uint32_t nb, int free_first)
{
    uint32_t g_free = free_first ? 0 : 1, g_con = free_first ? 1 : 0;
    memset(s, 0, sizeof *s);
    for (uint32_t a = 0; a < op->rank; a++) {
        if (!in_list(contract, nc, a) && !in_list(batch, nb, a))
            s->axes[g_free][s->n[g_free]++] = a;
    }
    memcpy(s->axes[g_con], contract, nc * sizeof *contract);
    s->n[g_con] = nc;
    memcpy(s->axes[2], batch, nb * sizeof *batch);
    s->n[2] = nb;
}

/* Merges each group into (extent, stride); returns 1 when all three merge. */
static int side_merge(dot_side *s, const tf_operand *op)
{
    int ok = 1;
    for (int g = 0; g < 3; g++) {
        int64_t e = 1, st = 0;
        int64_t total = 1;
        for (uint32_t i = 0; i < s->n[g]; i++) {
            uint32_t a = s->axes[g][i];
            total *= op->shape[a];
            if (op->shape[a] == 1)
                continue;
            if (e == 1) {
                st = op->strides[a];
                e = op->shape[a];
            } else if (op->strides[a] == st * e) {
                e *= op->shape[a];
            } else {
                ok = 0;
            }
        }
        s->ext[g] = total;
        s->stride[g] = st;
    }
    return ok;
}

/* Copies op into a dense temporary laid out as its groups in order. */
static tf_status materialise(vk_engine *e, const tf_operand *op, dot_side *s,
                             tf_engine_buffer **tmp)
{
    int64_t shape[TF_MAX_RANK], src_strides[TF_MAX_RANK], dst_strides[TF_MAX_RANK];
    uint32_t rank = 0;
    int64_t n = 1;
    for (int g = 0; g < 3; g++) {
        for (uint32_t i = 0; i < s->n[g]; i++) {
            uint32_t a = s->axes[g][i];
            shape[rank] = op->shape[a];
            src_strides[rank] = op->strides[a];
            dst_strides[rank] = n;
            n *= op->shape[a];
            rank++;
        }
    }
    size_t esize = tf_dtype_size((tf_dtype)op->dtype);
    tf_status st = tf__vk_buffer_alloc(e, (size_t)(n > 0 ? n : 1) * esize, 1, tmp);
    if (st != TF_OK)
        return st;
    tf_operand src = *op, dst = *op;
    src.rank = dst.rank = rank;
    src.shape = dst.shape = shape;
    src.strides = src_strides;
    dst.strides = dst_strides;
    dst.offset = 0;
    dst.buffer = *tmp;
    st = tf__vk_copy_op(e, &dst, &src);
    if (st != TF_OK) {
        tf__vk_buffer_free(e, *tmp);
        *tmp = NULL;
        return st;
    }
    /* Dense groups: strides 1, first extent, first * second extent. */
    s->stride[0] = 1;
    s->stride[1] = s->ext[0];
    s->stride[2] = s->ext[0] * s->ext[1];
    return TF_OK;
}

/* The shader of a family laid out f32, f64, i32, i64, c64 (GEMM) and c128 (GEMV). */
static uint32_t typed(uint32_t first_f32, uint32_t dtype)
{
    switch (dtype) {
    case TF_F64: return first_f32 + 1;
    case TF_I32: return first_f32 + 2;
    case TF_I64: return first_f32 + 3;
    case TF_C64: return first_f32 + 4;
    case TF_C128: return first_f32 + 5;
    default: return first_f32;
    }
}

/*
 * y[r, b] = sum_p mat[r, p, b] * vec[p, b] for R rows: `mat` and `vec` are
 * the merged (offset, strides) of the operand playing each role.
 */
static tf_status record_gemv(vk_engine *e, uint32_t dtype, const tf_operand *out,
                             tf_engine_buffer *mat, const int64_t *mat_pos, tf_engine_buffer *vec,
                             const int64_t *vec_pos, int64_t rows, int64_t k, int64_t nb,
                             uint32_t conj)
{
    int32_t p[11] = {(int32_t)rows,       (int32_t)k,          (int32_t)nb,
                     (int32_t)mat_pos[0], (int32_t)mat_pos[1], (int32_t)mat_pos[2],
                     (int32_t)mat_pos[3], (int32_t)vec_pos[0], (int32_t)vec_pos[1],
                     (int32_t)vec_pos[2], (int32_t)out->offset};
    uint64_t total = (uint64_t)(rows * nb);
    int per_thread = k < 256; /* long dot products get a workgroup each */
    vk_dispatch d = {
        .shader = typed(VK_SHADER_GEMV_F32, dtype),
        .n_bind = 3,
        .bind = {out->buffer, mat, vec},
        .writes = {1, 0, 0},
        .params = p,
        .n_params = 11,
        .push = {(uint32_t)total, 0, per_thread ? 1u : 0u, conj},
        .groups = {per_thread ? tf__vk_groups(total) : (uint32_t)(total < 65535 ? total : 65535), 1,
                   1}};
    return tf__vk_record_dispatch(e, &d);
}

/* The tile shapes of gemm.comp and gemm_big.comp (rows x columns of C per workgroup) and their
   families. */
typedef struct gemm_tile {
    int64_t bm, bn;
    uint32_t shader; /* the variant of the dtype */
} gemm_tile;

/*
 * Chooses by the output's shape, so that few workgroups compute padding and
 * large problems get the most reuse per load. Few columns (N <= 16) or few
 * rows (M <= 16): the 64 x 16 or 16 x 64 tile, whose narrow side covers them
 * (a 64 x 64 tile would waste three quarters or more). Both sides >= 96: the
 * 64 x 64 tile (16 products per invocation per loaded pair of values; at
 * most a third padding along a side). Otherwise the 32 x 32 tile, which
 * wastes less at the edges and makes four times the workgroups of 64 x 64
 * on mid-sized outputs. Both sides >= 512, f32 or f64, and `contiguous` (A's
 * rows adjacent, stride_m == 1, and B's depths adjacent, stride_k == 1, as
 * in column-major dense operands): the 128 x 128 tile of gemm_big.comp (64
 * products per invocation per pair of loaded 8-value groups, coalesced
 * loads, the next K-slice loaded while the current one is computed); from
 * 512 on it still makes at least 16 workgroups per batch. Not tuned on a
 * real GPU yet (docs/performance.md). c64 takes the same tiles but the
 * largest; c128 the 32 x 32 one (its two 16-byte tiles fill the 16 KiB of
 * shared memory every device has).
 */
static gemm_tile gemm_choose(int64_t m, int64_t n, uint32_t dtype, int contiguous)
{
    if (dtype == TF_C128)
        return (gemm_tile){32, 32, VK_SHADER_GEMM_M_C128};
    if (m >= 512 && n >= 512 && contiguous && (dtype == TF_F32 || dtype == TF_F64))
        return (gemm_tile){128, 128, typed(VK_SHADER_GEMM_BIG_F32, dtype)};
    if (n <= 16 && m > 16)
        return (gemm_tile){64, 16, typed(VK_SHADER_GEMM_T_F32, dtype)};
    if (m <= 16 && n > 16)
        return (gemm_tile){16, 64, typed(VK_SHADER_GEMM_W_F32, dtype)};
    if (m >= 96 && n >= 96)
        return (gemm_tile){64, 64, typed(VK_SHADER_GEMM_F32, dtype)};
    return (gemm_tile){32, 32, typed(VK_SHADER_GEMM_M_F32, dtype)};
}

static int small(int64_t v)
{
    return v >= INT32_MIN && v <= INT32_MAX;
}

tf_status tf__vk_exec_dot_general(vk_engine *e, const tf_exec *x)
{
    const tf_dot_general_params *pr = x->params;
    const tf_operand *lhs = x->inputs[0], *rhs = x->inputs[1], *out = x->outputs[0];
    dot_side l, r;
    side_init(&l, lhs, pr->lhs_contracting, pr->lhs_batch, pr->n_contracting, pr->n_batch, 1);
    side_init(&r, rhs, pr->rhs_contracting, pr->rhs_batch, pr->n_contracting, pr->n_batch, 0);
    int l_direct = side_merge(&l, lhs), r_direct = side_merge(&r, rhs);
    int64_t m = l.ext[0], k = l.ext[1], nb = l.ext[2], n = r.ext[1];
    /* ABI 1.4: TF_DOT_CONJ_LHS (bit 0) and TF_DOT_CONJ_RHS (bit 1), applied as loaded */
    uint32_t conj = TF_ABI_HAS_FIELD(pr, tf_dot_general_params, conjugate) &&
                            tf_dtype_is_complex((tf_dtype)lhs->dtype)
                        ? pr->conjugate & (TF_DOT_CONJ_LHS | TF_DOT_CONJ_RHS)
                        : 0u;
    /* GEMV with the roles swapped (M = 1): the matrix is rhs */
    uint32_t conj_swapped = ((conj & TF_DOT_CONJ_LHS) << 1) | ((conj & TF_DOT_CONJ_RHS) >> 1);
    if (m == 0 || n == 0 || nb == 0)
        return TF_OK;
    int64_t span_l = 0, span_r = 0;
    for (uint32_t a = 0; a < lhs->rank; a++)
        span_l += (lhs->shape[a] - 1) * (lhs->strides[a] < 0 ? -lhs->strides[a] : lhs->strides[a]);
    for (uint32_t a = 0; a < rhs->rank; a++)
        span_r += (rhs->shape[a] - 1) * (rhs->strides[a] < 0 ? -rhs->strides[a] : rhs->strides[a]);
    /* As the GEMM will read them: a group that does not merge is materialised dense (below);
       B's stride along K does not matter when K <= 1. */
    int contiguous = (!l_direct || l.stride[0] == 1) && (!r_direct || r.stride[0] == 1 || k <= 1);
    gemm_tile tile = gemm_choose(m, n, lhs->dtype, contiguous);
    if (m * n * nb >= INT32_MAX || m * k * nb >= INT32_MAX || k * n * nb >= INT32_MAX ||
        !small(lhs->offset + span_l) || !small(rhs->offset + span_r) ||
        !small(out->offset + m * n * nb) || (m + tile.bm - 1) / tile.bm > 65535 ||
        (n + tile.bn - 1) / tile.bn > 65535)
        return tf__vk_fail(e->host, TF_ERR_UNSUPPORTED,
                           "vulkan: DOT_GENERAL: operands beyond 32-bit indexing (M=%lld N=%lld "
                           "K=%lld batch=%lld)",
                           (long long)m, (long long)n, (long long)k, (long long)nb);
    tf_engine_buffer *lt = NULL, *rt = NULL;
    tf_status st = TF_OK;
    /* A zero stride (broadcast) group is read in place too: the shader takes any stride. */
    if (!l_direct && k > 0)
        st = materialise(e, lhs, &l, &lt);
    if (st == TF_OK && !r_direct && k > 0)
        st = materialise(e, rhs, &r, &rt);
    int64_t l_off = lt != NULL ? 0 : lhs->offset, r_off = rt != NULL ? 0 : rhs->offset;
    tf_engine_buffer *lb = lt != NULL ? lt : lhs->buffer, *rb = rt != NULL ? rt : rhs->buffer;
    if (st == TF_OK && (n == 1 || m == 1)) {
        /* N = 1: lhs rows times the rhs column; M = 1: rhs columns times the lhs row. */
        int64_t lhs_pos[4] = {l_off, l.stride[0], l.stride[1], l.stride[2]};
        int64_t rhs_pos[4] = {r_off, r.stride[1], r.stride[0], r.stride[2]};
        int64_t lhs_vec[3] = {l_off, l.stride[1], l.stride[2]};
        int64_t rhs_vec[3] = {r_off, r.stride[0], r.stride[2]};
        st = n == 1 ? record_gemv(e, lhs->dtype, out, lb, lhs_pos, rb, rhs_vec, m, k, nb, conj)
                    : record_gemv(e, lhs->dtype, out, rb, rhs_pos, lb, lhs_vec, n, k, nb,
                                  conj_swapped);
    } else if (st == TF_OK) {
        int32_t p[13] = {(int32_t)m,           (int32_t)n,           (int32_t)k,
                         (int32_t)nb,          (int32_t)l_off,       (int32_t)l.stride[0],
                         (int32_t)l.stride[1], (int32_t)l.stride[2], (int32_t)r_off,
                         (int32_t)r.stride[0], (int32_t)r.stride[1], (int32_t)r.stride[2],
                         (int32_t)out->offset};
        vk_dispatch d = {
            .shader = tile.shader,
            .n_bind = 3,
            .bind = {out->buffer, lb, rb},
            .writes = {1, 0, 0},
            .params = p,
            .n_params = 13,
            .push = {0, 0, 0, conj},
            .groups = {(uint32_t)((m + tile.bm - 1) / tile.bm),
                       (uint32_t)((n + tile.bn - 1) / tile.bn),
                       (uint32_t)(nb < 65535 ? nb : 65535)},
        };
        st = tf__vk_record_dispatch(e, &d);
    }
    tf__vk_buffer_free(e, lt);
    tf__vk_buffer_free(e, rt);
    return st;
}
