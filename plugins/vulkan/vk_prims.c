/*
 * vk_prims.c - how each primitive becomes a dispatch: FILL, IOTA, COPY,
 * UNARY, BINARY, COMPARE, SELECT, CONVERT, REDUCE, PAD, CONCATENATE, the
 * dynamic slices, GATHER and SCATTER (DOT_GENERAL lives in vk_dot.c, FUSED in
 * vk_fused.c), the walks of operands the shaders share, and execute's
 * dispatch table. What the engine supports, and its checks of unvalidated
 * calls, live in vk_check.c.
 *
 * f64 transcendental ops come from shaders/math64.glsl; complex UNARY and
 * BINARY are cunary.comp and cbinary.comp (on complex.glsl), complex
 * COMPARE, REDUCE, CONVERT and SCATTER variants of the common shaders, and
 * the type-blind shaders move c128 as 16-byte words. PAD and CONCATENATE
 * are FILL and COPY dispatches into strided views of the output; the dynamic
 * slices read their start indices on the device (dslice.comp). GATHER moves
 * every dtype; SCATTER is computed per output element, without atomics (ADD
 * on bool is a logical or).
 *
 * Dense operands of UNARY/BINARY (f32, i32), COPY and FILL (32-bit) take
 * the shaders' VEC4 variants, 4 elements per access (vec4_ok says when).
 *
 * Every shader addresses elements with 32-bit integers: execute refuses
 * (TF_ERR_UNSUPPORTED, before recording anything) an operand whose element
 * count or addressed range does not fit, whether the host validated the call
 * or not.
 */
#include <string.h>

#include "vk_internal.h"

/* ---- layouts ------------------------------------------------------------------------- */

/* Index of a dtype in the per-dtype shader families (f32, f64, i32, b8, i64, c64, c128). */
static uint32_t family(uint32_t d)
{
    switch (d) {
    case TF_F64: return 1;
    case TF_I32: return 2;
    case TF_BOOL: return 3;
    case TF_I64: return 4;
    case TF_C64: return 5;
    case TF_C128: return 6;
    default: return 0;
    }
}

/* Type-blind variant index by element size (8, 32, 64 or 128 bits). */
static uint32_t width(uint32_t d)
{
    size_t s = tf_dtype_size((tf_dtype)d);
    return s == 1 ? 0u : s == 4 ? 1u : s == 8 ? 2u : 3u;
}

static int64_t numel(const tf_operand *op)
{
    int64_t n = 1;
    for (uint32_t k = 0; k < op->rank; k++)
        n *= op->shape[k];
    return n;
}

tf_status tf__vk_too_large(vk_engine *e, uint32_t prim)
{
    return tf__vk_fail(e->host, TF_ERR_UNSUPPORTED,
                       "vulkan: %s: an operand exceeds 2^31 elements or addresses (this engine "
                       "indexes with 32-bit integers)",
                       tf__vk_prim_name(prim));
}

/* True when offset + every addressable element fits int32. */
static int fits(int64_t offset, uint32_t rank, const int64_t *shape, const int64_t *strides)
{
    int64_t lo = offset, hi = offset;
    for (uint32_t k = 0; k < rank; k++) {
        if (shape[k] == 0)
            return 1;
        int64_t span = (shape[k] - 1) * strides[k];
        if (span > 0)
            hi += span;
        else
            lo += span;
    }
    return lo >= 0 && hi < INT32_MAX;
}

/*
 * The walk of nops operands over ops[0]'s shape (see shaders/common.glsl):
 * extent-1 axes dropped, neighbours merged where every operand allows
 * (unless `keep`: then every axis stays, for shaders that index by axis).
 * The first `nfit` operands are checked to fit 32-bit addressing; the rest
 * are walks derived from real operands the caller checks itself (their
 * addresses are only formed, never read, outside those operands).
 * Writes all VK_LAYOUT_WORDS words of p (zero past the walk, where callers
 * append their own). Returns 0 when something does not fit 32-bit indexing.
 */
int tf__vk_layout(const tf_operand *const *ops, uint32_t nops, uint32_t nfit, int keep, int32_t *p,
                  uint64_t *n)
{
    const tf_operand *o0 = ops[0];
    int64_t shape[TF_MAX_RANK], strides[VK_MAX_BINDINGS][TF_MAX_RANK];
    int rank = 0;
    int64_t total = numel(o0);
    if (total >= INT32_MAX)
        return 0;
    for (uint32_t j = 0; j < nfit; j++) {
        if (!fits(ops[j]->offset, ops[j]->rank, ops[j]->shape, ops[j]->strides))
            return 0;
    }
    for (uint32_t k = 0; k < o0->rank; k++) {
        if (o0->shape[k] == 1 && !keep)
            continue;
        int merge = rank > 0 && !keep;
        for (uint32_t j = 0; j < nops && merge; j++)
            merge = ops[j]->strides[k] == strides[j][rank - 1] * shape[rank - 1];
        if (merge) {
            shape[rank - 1] *= o0->shape[k];
            continue;
        }
        shape[rank] = o0->shape[k];
        for (uint32_t j = 0; j < nops; j++)
            strides[j][rank] = ops[j]->strides[k];
        rank++;
    }
    memset(p, 0, VK_LAYOUT_WORDS * sizeof *p);
    p[0] = rank;
    for (int k = 0; k < rank; k++)
        p[1 + k] = (int32_t)shape[k];
    for (uint32_t j = 0; j < nops; j++) {
        p[9 + 9 * j] = (int32_t)ops[j]->offset;
        for (int k = 0; k < rank; k++)
            p[10 + 9 * j + k] = (int32_t)strides[j][k];
    }
    *n = (uint64_t)total;
    return 1;
}

/* The dense variant of an elementwise shader (VEC4, 16-byte accesses); UINT32_MAX if none. */
static uint32_t vec4_variant(uint32_t shader)
{
    switch (shader) {
    case VK_SHADER_UNARY_F32: return VK_SHADER_UNARY_F32_V4;
    case VK_SHADER_UNARY_I32: return VK_SHADER_UNARY_I32_V4;
    case VK_SHADER_BINARY_F32: return VK_SHADER_BINARY_F32_V4;
    case VK_SHADER_BINARY_I32: return VK_SHADER_BINARY_I32_V4;
    case VK_SHADER_COPY_W32: return VK_SHADER_COPY_W32_V4;
    case VK_SHADER_FILL_W32: return VK_SHADER_FILL_W32_V4;
    default: return UINT32_MAX;
    }
}

/*
 * Whether the walk `p` (from layout) lets every operand be read and written
 * as vectors of 4: one merged axis with stride 1 for all (dense, no
 * broadcast, not reversed) and element offsets that are multiples of 4 (the
 * bindings start 256-byte aligned, so vector j is 16-byte aligned). The
 * shader handles n % 4 trailing elements itself.
 */
static int vec4_ok(const int32_t *p, uint32_t nops, uint64_t n)
{
    if (p[0] != 1 || n < 4)
        return 0;
    for (uint32_t j = 0; j < nops; j++) {
        if (p[10 + 9 * j] != 1 || p[9 + 9 * j] % 4 != 0)
            return 0;
    }
    return 1;
}

/* One elementwise dispatch over ops (ops[0] the output, written), with n_extra parameter
   words after the walk's (FILL's 16-byte value). */
static tf_status elementwise_ex(vk_engine *e, uint32_t prim, uint32_t shader, uint32_t spec,
                                const tf_operand *const *ops, uint32_t nops, vk_push push,
                                const int32_t *extra, uint32_t n_extra)
{
    int32_t p[VK_LAYOUT_WORDS];
    uint64_t n;
    if (!tf__vk_layout(ops, nops, nops, 0, p, &n))
        return tf__vk_too_large(e, prim);
    if (n == 0)
        return TF_OK;
    if (n_extra > 0)
        memcpy(p + 9 + 9 * nops, extra, n_extra * sizeof *extra);
    vk_dispatch d = {.shader = shader,
                     .spec = spec,
                     .n_bind = nops,
                     .params = p,
                     .n_params = 9 + 9 * nops + n_extra,
                     .push = push};
    for (uint32_t j = 0; j < nops; j++) {
        d.bind[j] = ops[j]->buffer;
        d.writes[j] = j == 0;
    }
    d.push.n = (uint32_t)n;
    d.groups[0] = tf__vk_groups(n);
    d.groups[1] = d.groups[2] = 1;
    uint32_t v4 = vec4_variant(shader);
    if (v4 != UINT32_MAX && vec4_ok(p, nops, n)) {
        d.shader = v4;
        d.groups[0] = tf__vk_groups((n + 3) / 4);
    }
    return tf__vk_record_dispatch(e, &d);
}

static tf_status elementwise(vk_engine *e, uint32_t prim, uint32_t shader, uint32_t spec,
                             const tf_operand *const *ops, uint32_t nops, vk_push push)
{
    return elementwise_ex(e, prim, shader, spec, ops, nops, push, NULL, 0);
}

/* ---- primitives ------------------------------------------------------------------------ */

/* Every element of the (possibly strided) operand = value (+ imag i for complex). */
static tf_status fill_op(vk_engine *e, uint32_t prim, const tf_operand *out, tf_scalar value,
                         double imag)
{
    uint32_t w[4] = {0, 0, 0, 0};
    switch (out->dtype) {
    case TF_C64: {
        float f[2] = {(float)value.f, (float)imag};
        memcpy(w, f, 8);
        break;
    }
    case TF_C128: {
        double f[2] = {value.f, imag};
        memcpy(w, f, 16);
        break;
    }
    case TF_F32: {
        float f = (float)value.f;
        memcpy(w, &f, 4);
        break;
    }
    case TF_F64: memcpy(w, &value.f, 8); break;
    case TF_I32: {
        int32_t i = (int32_t)value.i;
        memcpy(w, &i, 4);
        break;
    }
    case TF_I64: memcpy(w, &value.i, 8); break;
    default: w[0] = value.i != 0; break;
    }
    static const uint32_t shaders[4] = {VK_SHADER_FILL_W8, VK_SHADER_FILL_W32, VK_SHADER_FILL_W64,
                                        VK_SHADER_FILL_W128};
    const tf_operand *ops[1] = {out};
    int32_t extra[4];
    memcpy(extra, w, sizeof extra);
    uint32_t wi = width(out->dtype);
    /* the 16-byte value travels after the walk (P[18..21]), the others in push words */
    return elementwise_ex(e, prim, shaders[wi], 0, ops, 1, (vk_push){0, w[0], w[1], 0}, extra,
                          wi == 3 ? 4u : 0u);
}

tf_status tf__vk_exec_fill(vk_engine *e, const tf_exec *x)
{
    const tf_fill_params *pr = x->params;
    double imag = TF_ABI_HAS_FIELD(pr, tf_fill_params, imag) ? pr->imag : 0.0;
    return fill_op(e, x->prim, x->outputs[0], pr->value, imag);
}

tf_status tf__vk_exec_iota(vk_engine *e, const tf_exec *x)
{
    const tf_iota_params *pr = x->params;
    const tf_operand *out = x->outputs[0];
    uint64_t inner = 1;
    for (uint32_t k = 0; k < pr->axis && k < out->rank; k++)
        inner *= (uint64_t)out->shape[k];
    uint64_t ext = out->rank > pr->axis ? (uint64_t)out->shape[pr->axis] : 1;
    /* Indexed by family(): f32, f64, i32, (bool: never supported), i64. */
    static const uint32_t shaders[5] = {VK_SHADER_IOTA_F32, VK_SHADER_IOTA_F64, VK_SHADER_IOTA_I32,
                                        VK_SHADER_IOTA_I32, VK_SHADER_IOTA_I64};
    if (inner == 0 || ext == 0)
        return TF_OK;
    if (inner * ext >= INT32_MAX)
        return tf__vk_too_large(e, x->prim);
    /* The output is dense, so its walk is in plain column-major order. */
    return elementwise(e, x->prim, shaders[family(out->dtype)], 0, x->outputs, 1,
                       (vk_push){0, (uint32_t)inner, (uint32_t)ext, 0});
}

tf_status tf__vk_copy_op(vk_engine *e, const tf_operand *dst, const tf_operand *src)
{
    static const uint32_t shaders[4] = {VK_SHADER_COPY_W8, VK_SHADER_COPY_W32, VK_SHADER_COPY_W64,
                                        VK_SHADER_COPY_W128};
    const tf_operand *ops[2] = {dst, src};
    return elementwise(e, TF_PRIM_COPY, shaders[width(dst->dtype)], 0, ops, 2,
                       (vk_push){0, 0, 0, 0});
}

tf_status tf__vk_exec_copy(vk_engine *e, const tf_exec *x)
{
    return tf__vk_copy_op(e, x->outputs[0], x->inputs[0]);
}

/*
 * PAD: FILL the output with the value, then COPY the part of the input that
 * lands inside it into the strided view j = low + i * (interior + 1).
 */
tf_status tf__vk_exec_pad(vk_engine *e, const tf_exec *x)
{
    const tf_pad_params *pr = x->params;
    const tf_operand *in = x->inputs[0], *out = x->outputs[0];
    tf_status st =
        fill_op(e, x->prim, out, pr->value, TF_ABI_HAS_FIELD(pr, tf_pad_params, imag) ? pr->imag : 0.0);
    int64_t shape[TF_MAX_RANK], dst_strides[TF_MAX_RANK];
    tf_operand src = *in, dst = *out;
    for (uint32_t k = 0; k < in->rank && st == TF_OK; k++) {
        /* in unsigned arithmetic: low and interior may be anything the ABI allows,
           INT64_MIN and INT64_MAX included (the step is then 2^63) */
        int64_t lo = pr->low[k], ext = out->shape[k], n = in->shape[k];
        uint64_t step = (uint64_t)pr->interior[k] + 1u, first = 0;
        if (n == 0 || ext == 0 || (lo >= 0 && lo >= ext))
            return TF_OK; /* nothing of the input lands in the output */
        if (lo < 0) {
            uint64_t need = 0u - (uint64_t)lo;
            first = need / step + (need % step != 0);
        }
        uint64_t last = ((uint64_t)(ext - 1) - (uint64_t)lo) / step;
        if (last > (uint64_t)(n - 1))
            last = (uint64_t)(n - 1);
        if (first > last)
            return TF_OK;
        shape[k] = (int64_t)(last - first + 1);
        int64_t at = (int64_t)((uint64_t)lo + first * step); /* lands in [0, ext) */
        src.offset += (int64_t)first * in->strides[k];
        dst.offset += at * out->strides[k];
        dst_strides[k] = shape[k] > 1 ? out->strides[k] * (int64_t)step : out->strides[k];
    }
    if (st != TF_OK)
        return st;
    src.shape = dst.shape = shape;
    dst.strides = dst_strides;
    return tf__vk_copy_op(e, &dst, &src);
}

/* CONCATENATE: each input COPYed into its slab of the output. */
tf_status tf__vk_exec_concatenate(vk_engine *e, const tf_exec *x)
{
    const tf_concatenate_params *pr = x->params;
    const tf_operand *out = x->outputs[0];
    int64_t at = 0;
    for (uint32_t i = 0; i < x->n_inputs; i++) {
        const tf_operand *in = x->inputs[i];
        tf_operand dst = *out;
        dst.shape = in->shape;
        dst.offset = out->offset + at * out->strides[pr->axis];
        at += in->shape[pr->axis];
        tf_status st = tf__vk_copy_op(e, &dst, in);
        if (st != TF_OK)
            return st;
    }
    return TF_OK;
}

/*
 * The dynamic slices: dst = src over `small`'s shape, with the side `side`
 * (0: src, 1: dst) shifted by the clamped starts; `big` gives the extents
 * the starts are clamped against.
 */
static tf_status dynamic_copy(vk_engine *e, uint32_t prim, const tf_operand *dst,
                              const tf_operand *src, const tf_operand *starts, const int64_t *big,
                              uint32_t side)
{
    const tf_operand *ops[2] = {dst, src};
    int32_t p[VK_LAYOUT_WORDS]; /* the walk uses 27 words; 27..36 follow it */
    uint64_t n;
    if (!tf__vk_layout(ops, 2, 2, 1, p, &n))
        return tf__vk_too_large(e, prim);
    if (n == 0)
        return TF_OK;
    for (uint32_t k = 0; k < dst->rank; k++)
        p[27 + k] = (int32_t)big[k];
    p[35] = (int32_t)starts->offset;
    p[36] = dst->rank > 0 ? (int32_t)starts->strides[0] : 0;
    uint32_t shader =
        VK_SHADER_DSLICE_W8_I32 + 2 * width(dst->dtype) + (starts->dtype == TF_I64 ? 1u : 0u);
    vk_dispatch d = {.shader = shader,
                     .n_bind = 3,
                     .bind = {dst->buffer, src->buffer, starts->buffer},
                     .writes = {1, 0, 0},
                     .params = p,
                     .n_params = 37,
                     .push = {(uint32_t)n, side, 0, 0},
                     .groups = {tf__vk_groups(n), 1, 1}};
    return tf__vk_record_dispatch(e, &d);
}

tf_status tf__vk_exec_dynamic_slice(vk_engine *e, const tf_exec *x)
{
    const tf_operand *in = x->inputs[0];
    if (!fits(in->offset, in->rank, in->shape, in->strides))
        return tf__vk_too_large(e, x->prim);
    return dynamic_copy(e, x->prim, x->outputs[0], x->inputs[0], x->inputs[1], x->inputs[0]->shape,
                        0);
}

/* out = base (a COPY), then the update COPYed into the block at the clamped starts. */
tf_status tf__vk_exec_dynamic_update_slice(vk_engine *e, const tf_exec *x)
{
    const tf_operand *out = x->outputs[0], *update = x->inputs[1];
    if (!fits(out->offset, out->rank, out->shape, out->strides))
        return tf__vk_too_large(e, x->prim);
    tf_status st = tf__vk_copy_op(e, out, x->inputs[0]);
    if (st != TF_OK)
        return st;
    tf_operand dst = *out;
    dst.shape = update->shape;
    return dynamic_copy(e, x->prim, &dst, update, x->inputs[2], out->shape, 1);
}

/* An operand over `like`'s shape with op's strides, the stride of `axis` replaced. */
static tf_operand axis_view(const tf_operand *op, const tf_operand *like, uint32_t axis,
                            int64_t axis_stride, int64_t *strides)
{
    tf_operand v = *op;
    v.rank = like->rank;
    v.shape = like->shape;
    for (uint32_t k = 0; k < like->rank; k++)
        strides[k] = k == axis ? axis_stride : (op->rank == like->rank ? op->strides[k] : 0);
    /* (a rank-1 index of INDEX_SELECT against a higher rank: stride 0 off the axis) */
    v.strides = strides;
    return v;
}

static uint32_t index_variant(uint32_t idx_dtype)
{
    return idx_dtype == TF_I64 ? 1u : 0u;
}

/* GATHER, both modes as one walk over out (see shaders/gather.comp). */
tf_status tf__vk_exec_gather(vk_engine *e, const tf_exec *x)
{
    const tf_gather_params *pr = x->params;
    const tf_operand *src = x->inputs[0], *index = x->inputs[1], *out = x->outputs[0];
    int64_t xs[TF_MAX_RANK], is[TF_MAX_RANK];
    tf_operand xv = axis_view(src, out, pr->axis, 0, xs);
    tf_operand iv = pr->mode == TF_GATHER_INDEX_SELECT
                        ? axis_view(index, out, pr->axis, index->strides[0], is)
                        : *index;
    const tf_operand *ops[3] = {out, &xv, &iv};
    int32_t p[VK_LAYOUT_WORDS];
    uint64_t n;
    if (!tf__vk_layout(ops, 3, 1, 0, p, &n) ||
        !fits(src->offset, src->rank, src->shape, src->strides) ||
        !fits(index->offset, index->rank, index->shape, index->strides))
        return tf__vk_too_large(e, x->prim);
    if (n == 0)
        return TF_OK;
    p[36] = (int32_t)src->strides[pr->axis];
    p[37] = (int32_t)src->shape[pr->axis];
    vk_dispatch d = {.shader = VK_SHADER_GATHER_W8_I32 + 2 * width(out->dtype) +
                               index_variant(index->dtype),
                     .n_bind = 3,
                     .bind = {out->buffer, src->buffer, index->buffer},
                     .writes = {1, 0, 0},
                     .params = p,
                     .n_params = 38,
                     .push = {(uint32_t)n, 0, 0, 0},
                     .groups = {tf__vk_groups(n), 1, 1}};
    return tf__vk_record_dispatch(e, &d);
}

/* SCATTER per output element (see shaders/scatter.comp). */
tf_status tf__vk_exec_scatter(vk_engine *e, const tf_exec *x)
{
    const tf_gather_params *pr = x->params;
    const tf_operand *base = x->inputs[0], *index = x->inputs[1], *upd = x->inputs[2];
    const tf_operand *out = x->outputs[0];
    uint32_t a = pr->axis;
    int select = pr->mode == TF_GATHER_INDEX_SELECT;
    int64_t us[TF_MAX_RANK], is[TF_MAX_RANK];
    tf_operand uv = axis_view(upd, out, a, 0, us);
    /* INDEX_SELECT: the rank-1 index is walked along the axis only, by j in the shader. */
    tf_operand iv = axis_view(index, out, a, 0, is);
    const tf_operand *ops[4] = {out, base, &uv, &iv};
    int32_t p[VK_LAYOUT_WORDS];
    uint64_t n;
    if (!tf__vk_layout(ops, 4, 2, 1, p, &n) ||
        !fits(upd->offset, upd->rank, upd->shape, upd->strides) ||
        !fits(index->offset, index->rank, index->shape, index->strides))
        return tf__vk_too_large(e, x->prim);
    if (n == 0)
        return TF_OK;
    p[45] = (int32_t)a;
    p[46] = (int32_t)(select ? index->shape[0] : index->shape[a]);
    p[47] = (int32_t)(select ? index->strides[0] : index->strides[a]);
    p[48] = (int32_t)upd->strides[a];
    p[49] = (int32_t)out->shape[a];
    for (uint32_t k = 0; k < TF_MAX_RANK; k++)
        p[50 + k] = k < out->rank ? (int32_t)(select ? out->shape[k] : index->shape[k]) : 0;
    /* scatter_<f32|f64|i32|i64|b8|c64|c128>_<index> */
    uint32_t fam = out->dtype == TF_F32    ? 0u
                   : out->dtype == TF_F64  ? 1u
                   : out->dtype == TF_I32  ? 2u
                   : out->dtype == TF_I64  ? 3u
                   : out->dtype == TF_C64  ? 5u
                   : out->dtype == TF_C128 ? 6u
                                           : 4u;
    vk_dispatch d = {.shader = VK_SHADER_SCATTER_F32_I32 + 2 * fam + index_variant(index->dtype),
                     .n_bind = 4,
                     .bind = {out->buffer, base->buffer, upd->buffer, index->buffer},
                     .writes = {1, 0, 0, 0},
                     .params = p,
                     .n_params = 58,
                     .push = {(uint32_t)n, pr->combine == TF_SCATTER_REPLACE ? 1u : 0u, 0, 0},
                     .groups = {tf__vk_groups(n), 1, 1}};
    return tf__vk_record_dispatch(e, &d);
}

/* out, then the inputs, as one operand list. */
static void gather_ops(const tf_exec *x, const tf_operand **ops)
{
    ops[0] = x->outputs[0];
    for (uint32_t i = 0; i < x->n_inputs && i + 1 < VK_MAX_BINDINGS; i++)
        ops[i + 1] = x->inputs[i];
}

/* The family member of `dtype` (laid out f32, f64, i32, b8, i64, c64, c128: see
   plugins/vulkan/CMakeLists.txt). */
static tf_status exec_family(vk_engine *e, const tf_exec *x, uint32_t base, uint32_t spec,
                             uint32_t dtype)
{
    const tf_operand *ops[VK_MAX_BINDINGS];
    gather_ops(x, ops);
    return elementwise(e, x->prim, base + family(dtype), spec, ops, x->n_inputs + 1,
                       (vk_push){0, 0, 0, 0});
}

tf_status tf__vk_exec_unary(vk_engine *e, const tf_exec *x)
{
    return exec_family(e, x, VK_SHADER_UNARY_F32, ((const tf_unary_params *)x->params)->op,
                       x->inputs[0]->dtype);
}

tf_status tf__vk_exec_binary(vk_engine *e, const tf_exec *x)
{
    /* COMPLEX: real parts in, the complex shader of the output's dtype */
    return exec_family(e, x, VK_SHADER_BINARY_F32, ((const tf_binary_params *)x->params)->op,
                       x->outputs[0]->dtype);
}

tf_status tf__vk_exec_compare(vk_engine *e, const tf_exec *x)
{
    return exec_family(e, x, VK_SHADER_COMPARE_F32, ((const tf_compare_params *)x->params)->op,
                       x->inputs[0]->dtype);
}

tf_status tf__vk_exec_select(vk_engine *e, const tf_exec *x)
{
    static const uint32_t shaders[4] = {VK_SHADER_SELECT_W8, VK_SHADER_SELECT_W32,
                                        VK_SHADER_SELECT_W64, VK_SHADER_SELECT_W128};
    const tf_operand *ops[VK_MAX_BINDINGS];
    gather_ops(x, ops);
    return elementwise(e, x->prim, shaders[width(ops[0]->dtype)], 0, ops, 4, (vk_push){0, 0, 0, 0});
}

tf_status tf__vk_exec_convert(vk_engine *e, const tf_exec *x)
{
    const tf_convert_params *pr = x->params;
    const tf_operand *ops[2] = {x->outputs[0], x->inputs[0]};
    /* convert_<src>_<dst>: rows by source family, 7 destinations each, in the table's order. */
    uint32_t src = family(ops[1]->dtype), dst = family(ops[0]->dtype);
    return elementwise(e, x->prim, VK_SHADER_CONVERT_F32_F32 + 7 * src + dst, 0, ops, 2,
                       (vk_push){0, pr->checked != 0, 0, 0});
}

/* Appends the non-unit axes in `mask` (or not) of `in`, merging where strides allow. */
static int reduce_axes(const tf_operand *in, uint64_t mask, int reduced, int64_t *shape,
                       int64_t *strides)
{
    int rank = 0;
    for (uint32_t k = 0; k < in->rank; k++) {
        if (((mask >> k) & 1u) != (uint64_t)reduced || in->shape[k] == 1)
            continue;
        if (rank > 0 && in->strides[k] == strides[rank - 1] * shape[rank - 1]) {
            shape[rank - 1] *= in->shape[k];
            continue;
        }
        shape[rank] = in->shape[k];
        strides[rank] = in->strides[k];
        rank++;
    }
    return rank;
}

tf_status tf__vk_exec_reduce(vk_engine *e, const tf_exec *x)
{
    const tf_reduce_params *pr = x->params;
    const tf_operand *in = x->inputs[0], *out = x->outputs[0];
    int64_t ks[TF_MAX_RANK], kst[TF_MAX_RANK], rs[TF_MAX_RANK], rst[TF_MAX_RANK];
    int kr = reduce_axes(in, pr->axes_mask, 0, ks, kst);
    int rr = reduce_axes(in, pr->axes_mask, 1, rs, rst);
    int64_t m = numel(out), r = 1;
    for (int k = 0; k < rr; k++)
        r *= rs[k];
    if (m == 0)
        return TF_OK;
    int64_t zero = 0;
    if (m >= INT32_MAX || r >= INT32_MAX || !fits(in->offset, in->rank, in->shape, in->strides) ||
        !fits(out->offset + m - 1, 0, NULL, &zero))
        return tf__vk_too_large(e, x->prim);
    int32_t p[36];
    memset(p, 0, sizeof p);
    p[0] = kr;
    p[9] = (int32_t)in->offset;
    for (int k = 0; k < kr; k++) {
        p[1 + k] = (int32_t)ks[k];
        p[10 + k] = (int32_t)kst[k];
    }
    p[18] = rr;
    for (int k = 0; k < rr; k++) {
        p[19 + k] = (int32_t)rs[k];
        p[27 + k] = (int32_t)rst[k];
    }
    p[35] = (int32_t)out->offset;
    /* Short reductions: one invocation per output; long ones: a workgroup per output. */
    int per_thread = r <= 128;
    /* The subgroup variant only matters for the workgroup-per-output path. */
    uint32_t base =
        e->subgroup_reduce && !per_thread ? VK_SHADER_REDUCE_SG_F32 : VK_SHADER_REDUCE_F32;
    vk_dispatch d = {
        .shader = base + family(in->dtype),
        .spec = pr->op,
        .n_bind = 2,
        .bind = {out->buffer, in->buffer},
        .writes = {1, 0},
        .params = p,
        .n_params = 36,
        .push = {(uint32_t)m, (uint32_t)r, per_thread ? 1u : 0u, 0},
        .groups = {per_thread ? tf__vk_groups((uint64_t)m) : (uint32_t)(m < 65535 ? m : 65535), 1,
                   1}};
    return tf__vk_record_dispatch(e, &d);
}

/* ---- execute ------------------------------------------------------------------------------ */

/* The dispatch of each primitive: tf__vk_exec_<name>, for every entry of TF_PRIM_LIST. */
#define EXEC_FN(NAME, name, value) [TF_PRIM_##NAME] = tf__vk_exec_##name,
static tf_status (*const exec_fns[TF_PRIM_COUNT_])(vk_engine *,
                                                   const tf_exec *) = {TF_PRIM_LIST(EXEC_FN)};

tf_status tf__vk_execute(vk_engine *e, const tf_exec *x)
{
    /* The host that sets TF_EXEC_VALIDATED has checked everything tf__vk_check would. */
    int validated = TF_ABI_HAS_FIELD(x, tf_exec, flags) && (x->flags & TF_EXEC_VALIDATED) != 0;
    if (!validated) {
        tf_status st = tf__vk_check(e, x);
        if (st != TF_OK)
            return st;
    }
    return exec_fns[x->prim](e, x);
}
