/*
 * vk_prims.c - what the engine supports and how each primitive becomes a
 * dispatch: FILL, IOTA, COPY, UNARY, BINARY, COMPARE, SELECT, CONVERT and
 * REDUCE (DOT_GENERAL lives in vk_dot.c).
 *
 * supports() and execute share one rule set (dtypes_ok), so the engine
 * claims exactly what it runs. f64 arithmetic needs shaderFloat64 (its
 * transcendental ops come from shaders/math64.glsl); the bool dtype needs 8-bit
 * storage and int8 arithmetic; i64 arithmetic needs shaderInt64 (without it
 * i64 is still moved by the type-blind shaders). PAD and
 * CONCATENATE are FILL and COPY dispatches into strided views of the
 * output; the dynamic slices read their start indices on the device
 * (dslice.comp). GATHER moves every dtype; SCATTER is computed per output
 * element, without atomics (ADD on bool is a logical or).
 *
 * Dense operands of UNARY/BINARY (f32, i32), COPY and FILL (32-bit) take
 * the shaders' VEC4 variants, 4 elements per access (vec4_ok says when).
 *
 * FUSED (a chain of float UNARY/BINARY steps over up to five inputs, with up
 * to eight outputs) is one dispatch of fused.comp compiled for the program,
 * whose steps call the very functions unary.comp and binary.comp run
 * (shaders/float_ops.glsl), so each output is its step's result bit for
 * bit. How the program reaches the shader is explained at exec_fused.
 *
 * Every shader addresses elements with 32-bit integers: execute refuses
 * (TF_ERR_UNSUPPORTED, before recording anything) an operand whose element
 * count or addressed range does not fit.
 */
#include <string.h>

#include "vk_internal.h"

#define MAX_OPS VK_MAX_BINDINGS /* operands of one walk: FUSED's five inputs and eight outputs */
#define LAYOUT_WORDS (9 + 9 * MAX_OPS)

/* ---- supports ---------------------------------------------------------------------- */

/* The dtype is stored (moved) by type-blind shaders on this device. */
static int movable(const vk_engine *e, uint32_t d)
{
    return d < TF_DTYPE_COUNT && (d != TF_BOOL || e->phys->bool8);
}

/* Computed on: f32, i32, bool (8-bit support), f64 (shaderFloat64), i64 (shaderInt64). */
static int computable(const vk_engine *e, uint32_t d)
{
    switch (d) {
    case TF_F32:
    case TF_I32: return 1;
    case TF_F64: return e->phys->f64;
    case TF_I64: return e->phys->i64;
    case TF_BOOL: return e->phys->bool8;
    default: return 0;
    }
}

static int unary_ok(uint32_t d, uint32_t op)
{
    switch (d) {
    case TF_F32:
    case TF_F64: return op < TF_UNARY_COUNT_ && op != TF_UNARY_LOGICAL_NOT;
    case TF_I32:
    case TF_I64:
        return op == TF_UNARY_NEG || op == TF_UNARY_ABS || op == TF_UNARY_SIGN ||
               op == TF_UNARY_SQUARE;
    case TF_BOOL: return op == TF_UNARY_LOGICAL_NOT;
    }
    return 0;
}

static int binary_ok(uint32_t d, uint32_t op)
{
    switch (d) {
    case TF_F32:
    case TF_F64: return op <= TF_BINARY_REM;
    case TF_I32:
    case TF_I64: return op < TF_BINARY_COUNT_;
    case TF_BOOL:
        return op == TF_BINARY_AND || op == TF_BINARY_OR || op == TF_BINARY_XOR ||
               op == TF_BINARY_MAX || op == TF_BINARY_MIN;
    }
    return 0;
}

static int same(const uint32_t *d, uint32_t n)
{
    for (uint32_t i = 1; i < n; i++) {
        if (d[i] != d[0])
            return 0;
    }
    return 1;
}

static int dtypes_ok(const vk_engine *e, uint32_t prim, uint32_t op, const uint32_t *d, uint32_t n)
{
    switch (prim) {
    case TF_PRIM_FILL: return n == 1 && op == 0 && movable(e, d[0]);
    case TF_PRIM_COPY:
    case TF_PRIM_PAD: return n == 2 && op == 0 && same(d, 2) && movable(e, d[0]);
    case TF_PRIM_CONCATENATE: return n >= 2 && op == 0 && same(d, n) && movable(e, d[0]);
    case TF_PRIM_DYNAMIC_SLICE:
        return n == 3 && op == 0 && d[2] == d[0] && movable(e, d[0]) &&
               (d[1] == TF_I32 || d[1] == TF_I64);
    case TF_PRIM_DYNAMIC_UPDATE_SLICE:
        return n == 4 && op == 0 && d[1] == d[0] && d[3] == d[0] && movable(e, d[0]) &&
               (d[2] == TF_I32 || d[2] == TF_I64);
    case TF_PRIM_GATHER:
        return n == 3 && op == 0 && d[2] == d[0] && movable(e, d[0]) &&
               (d[1] == TF_I32 || d[1] == TF_I64);
    case TF_PRIM_SCATTER:
        return n == 4 && op == 0 && d[2] == d[0] && d[3] == d[0] && computable(e, d[0]) &&
               (d[1] == TF_I32 || d[1] == TF_I64);
    case TF_PRIM_SELECT:
        return n == 4 && op == 0 && d[0] == TF_BOOL && e->phys->bool8 && same(d + 1, 3) &&
               movable(e, d[1]);
    case TF_PRIM_IOTA: return n == 1 && op == 0 && d[0] != TF_BOOL && computable(e, d[0]);
    case TF_PRIM_UNARY: return n == 2 && same(d, 2) && computable(e, d[0]) && unary_ok(d[0], op);
    case TF_PRIM_BINARY: return n == 3 && same(d, 3) && computable(e, d[0]) && binary_ok(d[0], op);
    case TF_PRIM_COMPARE:
        return n == 3 && d[0] == d[1] && d[2] == TF_BOOL && computable(e, d[0]) && e->phys->bool8 &&
               op < TF_COMPARE_COUNT_;
    case TF_PRIM_CONVERT: return n == 2 && op == 0 && computable(e, d[0]) && computable(e, d[1]);
    case TF_PRIM_REDUCE:
        return n == 2 && same(d, 2) && computable(e, d[0]) && op < TF_REDUCE_COUNT_ &&
               (d[0] != TF_BOOL || op == TF_REDUCE_MAX || op == TF_REDUCE_MIN);
    case TF_PRIM_DOT_GENERAL:
        return n == 3 && op == 0 && same(d, 3) && d[0] != TF_BOOL && computable(e, d[0]);
    case TF_PRIM_FUSED:
        /* op + 1 outputs after 1 .. 5 inputs. Every step op unary_ok/binary_ok allows for
           the float dtype runs in fused.comp. */
        return op < TF_FUSED_MAX_OUTPUTS && n >= op + 2 && n <= TF_FUSED_MAX_INPUTS + op + 1 &&
               same(d, n) && (d[0] == TF_F32 || d[0] == TF_F64) && computable(e, d[0]);
    }
    return 0;
}

int tf__vk_supports(const vk_engine *e, uint32_t prim, uint32_t op, const uint32_t *dtypes,
                    uint32_t n_dtypes)
{
    if (prim >= TF_PRIM_COUNT_ || n_dtypes == 0 || dtypes == NULL)
        return 0;
    for (uint32_t i = 0; i < n_dtypes; i++) {
        if (dtypes[i] >= TF_DTYPE_COUNT)
            return 0;
    }
    return dtypes_ok(e, prim, op, dtypes, n_dtypes);
}

/* ---- layouts ------------------------------------------------------------------------- */

/* Index of a dtype in the per-dtype shader families (f32, f64, i32, b8, i64). */
static uint32_t family(uint32_t d)
{
    switch (d) {
    case TF_F64: return 1;
    case TF_I32: return 2;
    case TF_BOOL: return 3;
    case TF_I64: return 4;
    default: return 0;
    }
}

/* Type-blind variant index by element size (8, 32 or 64 bits). */
static uint32_t width(uint32_t d)
{
    size_t s = tf_dtype_size((tf_dtype)d);
    return s == 1 ? 0u : (s == 4 ? 1u : 2u);
}

static int64_t numel(const tf_operand *op)
{
    int64_t n = 1;
    for (uint32_t k = 0; k < op->rank; k++)
        n *= op->shape[k];
    return n;
}

static tf_status too_large(vk_engine *e, uint32_t prim)
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
 * Writes all LAYOUT_WORDS words of p (zero past the walk, where callers
 * append their own). Returns 0 when something does not fit 32-bit indexing.
 */
static int layout(const tf_operand *const *ops, uint32_t nops, uint32_t nfit, int keep, int32_t *p,
                  uint64_t *n)
{
    const tf_operand *o0 = ops[0];
    int64_t shape[TF_MAX_RANK], strides[MAX_OPS][TF_MAX_RANK];
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
    memset(p, 0, LAYOUT_WORDS * sizeof *p);
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

/* One elementwise dispatch over ops (ops[0] the output, written). */
static tf_status elementwise(vk_engine *e, uint32_t prim, uint32_t shader, uint32_t spec,
                             const tf_operand *const *ops, uint32_t nops, vk_push push)
{
    int32_t p[LAYOUT_WORDS];
    uint64_t n;
    if (!layout(ops, nops, nops, 0, p, &n))
        return too_large(e, prim);
    if (n == 0)
        return TF_OK;
    vk_dispatch d = {.shader = shader,
                     .spec = spec,
                     .n_bind = nops,
                     .params = p,
                     .n_params = 9 + 9 * nops,
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

/* ---- primitives ------------------------------------------------------------------------ */

/* Every element of the (possibly strided) operand = value. */
static tf_status fill_op(vk_engine *e, uint32_t prim, const tf_operand *out, tf_scalar value)
{
    uint32_t w[2] = {0, 0};
    switch (out->dtype) {
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
    static const uint32_t shaders[3] = {VK_SHADER_FILL_W8, VK_SHADER_FILL_W32, VK_SHADER_FILL_W64};
    const tf_operand *ops[1] = {out};
    return elementwise(e, prim, shaders[width(out->dtype)], 0, ops, 1, (vk_push){0, w[0], w[1], 0});
}

static tf_status exec_fill(vk_engine *e, const tf_exec *x)
{
    return fill_op(e, x->prim, x->outputs[0], ((const tf_fill_params *)x->params)->value);
}

static tf_status exec_iota(vk_engine *e, const tf_exec *x)
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
        return too_large(e, x->prim);
    /* The output is dense, so its walk is in plain column-major order. */
    return elementwise(e, x->prim, shaders[family(out->dtype)], 0, x->outputs, 1,
                       (vk_push){0, (uint32_t)inner, (uint32_t)ext, 0});
}

tf_status tf__vk_copy_op(vk_engine *e, const tf_operand *dst, const tf_operand *src)
{
    static const uint32_t shaders[3] = {VK_SHADER_COPY_W8, VK_SHADER_COPY_W32, VK_SHADER_COPY_W64};
    const tf_operand *ops[2] = {dst, src};
    return elementwise(e, TF_PRIM_COPY, shaders[width(dst->dtype)], 0, ops, 2,
                       (vk_push){0, 0, 0, 0});
}

/*
 * PAD: FILL the output with the value, then COPY the part of the input that
 * lands inside it into the strided view j = low + i * (interior + 1).
 */
static tf_status exec_pad(vk_engine *e, const tf_exec *x)
{
    const tf_pad_params *pr = x->params;
    const tf_operand *in = x->inputs[0], *out = x->outputs[0];
    tf_status st = fill_op(e, x->prim, out, pr->value);
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
static tf_status exec_concatenate(vk_engine *e, const tf_exec *x)
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
    int32_t p[LAYOUT_WORDS]; /* the walk uses 27 words; 27..36 follow it */
    uint64_t n;
    if (!layout(ops, 2, 2, 1, p, &n))
        return too_large(e, prim);
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

static tf_status exec_dynamic_slice(vk_engine *e, const tf_exec *x)
{
    const tf_operand *in = x->inputs[0];
    if (!fits(in->offset, in->rank, in->shape, in->strides))
        return too_large(e, x->prim);
    return dynamic_copy(e, x->prim, x->outputs[0], x->inputs[0], x->inputs[1], x->inputs[0]->shape,
                        0);
}

/* out = base (a COPY), then the update COPYed into the block at the clamped starts. */
static tf_status exec_dynamic_update_slice(vk_engine *e, const tf_exec *x)
{
    const tf_operand *out = x->outputs[0], *update = x->inputs[1];
    if (!fits(out->offset, out->rank, out->shape, out->strides))
        return too_large(e, x->prim);
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
static tf_status exec_gather(vk_engine *e, const tf_exec *x)
{
    const tf_gather_params *pr = x->params;
    const tf_operand *src = x->inputs[0], *index = x->inputs[1], *out = x->outputs[0];
    int64_t xs[TF_MAX_RANK], is[TF_MAX_RANK];
    tf_operand xv = axis_view(src, out, pr->axis, 0, xs);
    tf_operand iv = pr->mode == TF_GATHER_INDEX_SELECT
                        ? axis_view(index, out, pr->axis, index->strides[0], is)
                        : *index;
    const tf_operand *ops[3] = {out, &xv, &iv};
    int32_t p[LAYOUT_WORDS];
    uint64_t n;
    if (!layout(ops, 3, 1, 0, p, &n) || !fits(src->offset, src->rank, src->shape, src->strides) ||
        !fits(index->offset, index->rank, index->shape, index->strides))
        return too_large(e, x->prim);
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
static tf_status exec_scatter(vk_engine *e, const tf_exec *x)
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
    int32_t p[LAYOUT_WORDS];
    uint64_t n;
    if (!layout(ops, 4, 2, 1, p, &n) || !fits(upd->offset, upd->rank, upd->shape, upd->strides) ||
        !fits(index->offset, index->rank, index->shape, index->strides))
        return too_large(e, x->prim);
    if (n == 0)
        return TF_OK;
    p[45] = (int32_t)a;
    p[46] = (int32_t)(select ? index->shape[0] : index->shape[a]);
    p[47] = (int32_t)(select ? index->strides[0] : index->strides[a]);
    p[48] = (int32_t)upd->strides[a];
    p[49] = (int32_t)out->shape[a];
    for (uint32_t k = 0; k < TF_MAX_RANK; k++)
        p[50 + k] = k < out->rank ? (int32_t)(select ? out->shape[k] : index->shape[k]) : 0;
    /* scatter_<f32|f64|i32|i64|b8>_<index> */
    uint32_t fam = out->dtype == TF_F32   ? 0u
                   : out->dtype == TF_F64 ? 1u
                   : out->dtype == TF_I32 ? 2u
                   : out->dtype == TF_I64 ? 3u
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
    for (uint32_t i = 0; i < x->n_inputs && i + 1 < MAX_OPS; i++)
        ops[i + 1] = x->inputs[i];
}

static tf_status exec_family(vk_engine *e, const tf_exec *x, uint32_t base, uint32_t spec,
                             vk_push push)
{
    const tf_operand *ops[MAX_OPS];
    gather_ops(x, ops);
    /* Families are laid out f32, f64, i32, b8 (see plugins/vulkan/CMakeLists.txt). */
    return elementwise(e, x->prim, base + family(x->inputs[0]->dtype), spec, ops, x->n_inputs + 1,
                       push);
}

static uint32_t family_base(uint32_t prim)
{
    switch (prim) {
    case TF_PRIM_UNARY: return VK_SHADER_UNARY_F32;
    case TF_PRIM_BINARY: return VK_SHADER_BINARY_F32;
    case TF_PRIM_COMPARE: return VK_SHADER_COMPARE_F32;
    default: return VK_SHADER_REDUCE_F32;
    }
}

static tf_status exec_select(vk_engine *e, const tf_exec *x)
{
    static const uint32_t shaders[3] = {VK_SHADER_SELECT_W8, VK_SHADER_SELECT_W32,
                                        VK_SHADER_SELECT_W64};
    const tf_operand *ops[MAX_OPS];
    gather_ops(x, ops);
    return elementwise(e, x->prim, shaders[width(ops[0]->dtype)], 0, ops, 4, (vk_push){0, 0, 0, 0});
}

static tf_status exec_convert(vk_engine *e, const tf_exec *x)
{
    const tf_convert_params *pr = x->params;
    const tf_operand *ops[2] = {x->outputs[0], x->inputs[0]};
    /* convert_<src>_<dst>: rows by source family, 5 destinations each, in the table's order. */
    uint32_t src = family(ops[1]->dtype), dst = family(ops[0]->dtype);
    return elementwise(e, x->prim, VK_SHADER_CONVERT_F32_F32 + 5 * src + dst, 0, ops, 2,
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

static tf_status exec_reduce(vk_engine *e, const tf_exec *x)
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
        return too_large(e, x->prim);
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

/*
 * FUSED: one dispatch of fused.comp over the walk of the outputs and the
 * inputs (broadcast inputs have stride 0 and merge like any other operand).
 * Walk operand j is binding j: out[0], five input slots, out[1 .. 7]. The
 * shader names all thirteen bindings, so each must hold a valid buffer:
 * unused input slots hold input 0 and unused output slots out[0], never
 * touched.
 *
 * The program is compiled into the pipeline: specialisation constants (laid
 * out in shaders/fused.comp) give its shape and the registers each step
 * reads, and vk_spirv.c points each step's call at its op's function in a
 * module made for the program. The driver then emits straight-line code with
 * the registers in SSA form and only the ops, loads and stores the program
 * has, where an interpreter (a switch over every op per step, registers in
 * an indexed array) ran up to 9 times slower than the steps as separate
 * dispatches on lavapipe. The price is a pipeline per distinct program and
 * form: compiled on first use, kept in the engine's pipeline list with the
 * others (at most max_programs of them, the least recently used going
 * first) and in the VkPipelineCache. A training loop repeats a few programs.
 *
 * The form is part of the program: dense when, after merging, the walk has
 * at most one axis and every input runs along it with stride 1 or is one
 * broadcast element (a scalar; so the shader indexes offset + i, no walk),
 * with vector accesses when the non-broadcast operands start at element
 * offsets that are multiples of 4 and there are at least 4 elements;
 * otherwise strided, compiled for the walk's rank. Inputs whose strides
 * are all 0 are read once in every form. The parameter block holds the walk
 * and then 2 zero words per step (the fences of fused.comp).
 */
#define FUSED_FIRST_OUT (1 + TF_FUSED_MAX_INPUTS) /* walk operand of out[1] */
/* The walk, then 2 words per step that are 0 (fused.comp's fences). */
#define FUSED_PARAMS (LAYOUT_WORDS + 2 * TF_FUSED_MAX_STEPS)
_Static_assert(MAX_OPS == 13 && LAYOUT_WORDS == 126, "fused.comp's NOPS and ZEROS");

/* The outputs of a FUSED call: 1 for a 1.2 host, whose params end before n_outputs. */
static uint32_t fused_outputs(const tf_fused_params *pr)
{
    return TF_ABI_HAS_FIELD(pr, tf_fused_params, outputs) && pr->n_outputs > 1 ? pr->n_outputs : 1;
}

/* Walk operand j (of the first nwalk, from layout p) never moves: stride 0 on every axis. */
static int still(const int32_t *p, uint32_t j)
{
    for (int32_t k = 0; k < p[0]; k++) {
        if (p[10 + 9 * j + k] != 0)
            return 0;
    }
    return 1;
}

/*
 * The specialisation constants of a call (fused.comp): *op the form word,
 * prog[0 .. 15] the steps with registers renumbered (inputs 0 .. 4, step k
 * 5 + k), prog[16 .. 17] the register of each output (a byte each); and
 * whether the vector form applies.
 */
static int fused_program(const tf_fused_params *pr, uint32_t n_in, uint32_t m, const int32_t *p,
                         uint64_t n, uint32_t *op, uint32_t prog[VK_SPEC_WORDS - 1])
{
    /* Outputs are dense (the core checks): stride 1 in a walk of one axis. */
    uint32_t bcast = 0, dense = p[0] == 0 || (p[0] == 1 && p[10] == 1);
    uint32_t aligned = n >= 4 && p[9] % 4 == 0;
    for (uint32_t j = 0; j < n_in; j++) {
        if (still(p, 1 + j))
            bcast |= 1u << j;
        else
            dense = dense && p[10 + 9 * (1 + j)] == 1;
        if (!(bcast >> j & 1u) && p[9 + 9 * (1 + j)] % 4 != 0)
            aligned = 0;
    }
    for (uint32_t j = FUSED_FIRST_OUT; j < FUSED_FIRST_OUT + m - 1; j++) {
        dense = dense && (p[0] == 0 || p[10 + 9 * j] == 1);
        if (p[9 + 9 * j] % 4 != 0)
            aligned = 0;
    }
    uint32_t rank = dense ? 0 : (uint32_t)p[0];
    *op = n_in | pr->n_steps << 3 | rank << 8 | dense << 12 | bcast << 13 | m << 18;
    memset(prog, 0, (VK_SPEC_WORDS - 1) * sizeof *prog);
    for (uint32_t k = 0; k < pr->n_steps; k++) {
        const tf_fused_step *s = &pr->steps[k];
        uint32_t a = s->a < n_in ? s->a : s->a - n_in + TF_FUSED_MAX_INPUTS;
        uint32_t b =
            s->kind == TF_FUSED_BINARY && s->b >= n_in ? s->b - n_in + TF_FUSED_MAX_INPUTS : s->b;
        prog[k] = s->kind | s->op << 1 | a << 8 | b << 16;
    }
    for (uint32_t i = 0; i < m; i++) {
        uint32_t k = m > 1 ? pr->outputs[i] : pr->n_steps - 1;
        prog[TF_FUSED_MAX_STEPS + i / 4] |= (TF_FUSED_MAX_INPUTS + k) << (8 * (i % 4));
    }
    return dense && aligned;
}

static tf_status exec_fused(vk_engine *e, const tf_exec *x)
{
    const tf_fused_params *pr = x->params;
    uint32_t n_in = x->n_inputs, m = fused_outputs(pr);
    const tf_operand *ops[MAX_OPS];
    ops[0] = x->outputs[0];
    for (uint32_t j = 0; j < TF_FUSED_MAX_INPUTS; j++)
        ops[1 + j] = x->inputs[j < n_in ? j : 0];
    for (uint32_t i = 1; i < TF_FUSED_MAX_OUTPUTS; i++)
        ops[TF_FUSED_MAX_INPUTS + i] = x->outputs[i < m ? i : 0];
    uint32_t nwalk = m > 1 ? TF_FUSED_MAX_INPUTS + m : 1 + n_in; /* the slots in use */
    int32_t p[FUSED_PARAMS];
    uint64_t n;
    if (!layout(ops, nwalk, nwalk, 0, p, &n))
        return too_large(e, x->prim);
    if (n == 0)
        return TF_OK;
    memset(p + LAYOUT_WORDS, 0, (FUSED_PARAMS - LAYOUT_WORDS) * sizeof *p); /* fused.comp's zeros */
    uint32_t op, prog[VK_SPEC_WORDS - 1];
    int vec4 = fused_program(pr, n_in, m, p, n, &op, prog);
    int f64 = ops[0]->dtype == TF_F64;
    vk_dispatch d = {.shader = vec4 ? (f64 ? VK_SHADER_FUSED_F64_V4 : VK_SHADER_FUSED_F32_V4)
                                    : (f64 ? VK_SHADER_FUSED_F64 : VK_SHADER_FUSED_F32),
                     .spec = op,
                     .program = prog,
                     .n_bind = MAX_OPS,
                     .params = p,
                     .n_params = FUSED_PARAMS,
                     .push = {(uint32_t)n, 0, 0, 0},
                     .groups = {tf__vk_groups(vec4 ? (n + 3) / 4 : n), 1, 1}};
    for (uint32_t j = 0; j < MAX_OPS; j++) {
        d.bind[j] = ops[j]->buffer;
        d.writes[j] = j == 0 || j > TF_FUSED_MAX_INPUTS;
    }
    return tf__vk_record_dispatch(e, &d);
}

/* ---- execute ------------------------------------------------------------------------------ */

/* The sub-operation supports() is asked with: the op, or FUSED's outputs - 1. */
static uint32_t exec_op(const tf_exec *x)
{
    switch (x->prim) {
    case TF_PRIM_UNARY: return ((const tf_unary_params *)x->params)->op;
    case TF_PRIM_BINARY: return ((const tf_binary_params *)x->params)->op;
    case TF_PRIM_COMPARE: return ((const tf_compare_params *)x->params)->op;
    case TF_PRIM_REDUCE: return ((const tf_reduce_params *)x->params)->op;
    case TF_PRIM_FUSED: return fused_outputs(x->params) - 1;
    default: return 0;
    }
}

static int same_shape(const tf_operand *a, const tf_operand *b)
{
    if (a->rank != b->rank || a->rank > TF_MAX_RANK)
        return 0;
    for (uint32_t k = 0; k < a->rank; k++) {
        if (a->shape[k] != b->shape[k])
            return 0;
    }
    return 1;
}

/* Every operand of a FUSED call (the inputs, then the m outputs) has out[0]'s float dtype
   and shape. */
static tf_status check_fused_operands(vk_engine *e, const tf_exec *x, uint32_t m)
{
    const tf_operand *out = x->outputs[0];
    if (out->dtype != TF_F32 && out->dtype != TF_F64)
        return tf__vk_fail(e->host, TF_ERR_DTYPE_MISMATCH,
                           "vulkan: FUSED: the output is not f32 or f64");
    for (uint32_t i = 0; i < x->n_inputs + m; i++) {
        int is_in = i < x->n_inputs;
        uint32_t idx = is_in ? i : i - x->n_inputs;
        const tf_operand *op = is_in ? x->inputs[idx] : x->outputs[idx];
        const char *what = is_in ? "input" : "output";
        if (op->dtype != out->dtype)
            return tf__vk_fail(e->host, TF_ERR_DTYPE_MISMATCH,
                               "vulkan: FUSED: %s %u has another dtype than output 0", what, idx);
        if (!same_shape(op, out))
            return tf__vk_fail(e->host, TF_ERR_SHAPE_MISMATCH,
                               "vulkan: FUSED: %s %u has another shape than output 0", what, idx);
    }
    return TF_OK;
}

/* The ABI 1.3 fields: m outputs, receiving strictly increasing steps, the last one last. */
static tf_status check_fused_outputs(vk_engine *e, const tf_fused_params *pr)
{
    if (!TF_ABI_HAS_FIELD(pr, tf_fused_params, outputs) || pr->n_outputs <= 1)
        return TF_OK;
    if (pr->n_outputs > TF_FUSED_MAX_OUTPUTS || pr->outputs == NULL)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION,
                           "vulkan: FUSED: n_outputs %u (2 to %d) with outputs %s", pr->n_outputs,
                           TF_FUSED_MAX_OUTPUTS, pr->outputs ? "set" : "NULL");
    for (uint32_t i = 0; i < pr->n_outputs; i++) {
        uint32_t k = pr->outputs[i];
        int last = i + 1 == pr->n_outputs;
        if (k >= pr->n_steps || (i > 0 && k <= pr->outputs[i - 1]) ||
            (last && k != pr->n_steps - 1))
            return tf__vk_fail(e->host, TF_ERR_VALIDATION,
                               "vulkan: FUSED: outputs[%u] = step %u (strictly increasing, the "
                               "last %u)",
                               i, k, pr->n_steps - 1);
    }
    return TF_OK;
}

/*
 * A FUSED call's own rules (the core checks the same ones; error kinds as its
 * prim_check.c gives them): the shader indexes its registers with the
 * steps' operands and the outputs' steps, so a program is always checked
 * before it is recorded. The operand counts were checked against m already.
 */
static tf_status check_fused(vk_engine *e, const tf_exec *x)
{
    const tf_fused_params *pr = x->params;
    uint32_t n = x->n_inputs;
    if (n < 1 || n > TF_FUSED_MAX_INPUTS)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION, "vulkan: FUSED: %u inputs (1 to %d)", n,
                           TF_FUSED_MAX_INPUTS);
    if (!TF_ABI_HAS_FIELD(pr, tf_fused_params, steps) || pr->n_steps < 1 ||
        pr->n_steps > TF_FUSED_MAX_STEPS || pr->steps == NULL)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION,
                           "vulkan: FUSED: bad params (struct_size %u, n_steps %u, steps %s)",
                           pr->struct_size, pr->n_steps, pr->steps ? "set" : "NULL");
    tf_status st = check_fused_outputs(e, pr);
    if (st == TF_OK)
        st = check_fused_operands(e, x, fused_outputs(pr));
    if (st != TF_OK)
        return st;
    uint32_t dtype = x->outputs[0]->dtype;
    for (uint32_t k = 0; k < pr->n_steps; k++) {
        const tf_fused_step *s = &pr->steps[k];
        int binary = s->kind == TF_FUSED_BINARY;
        if (s->kind >= TF_FUSED_KIND_COUNT_ ||
            s->op >= (binary ? (uint32_t)TF_BINARY_COUNT_ : (uint32_t)TF_UNARY_COUNT_) ||
            s->a >= n + k || (binary ? s->b >= n + k : s->b != 0))
            return tf__vk_fail(e->host, TF_ERR_VALIDATION,
                               "vulkan: FUSED: step %u (kind %u, op %u, a %u, b %u) is invalid "
                               "with %u registers",
                               k, s->kind, s->op, s->a, s->b, n + k);
        if (binary ? !binary_ok(dtype, s->op) : !unary_ok(dtype, s->op))
            return tf__vk_fail(e->host, TF_ERR_DTYPE_MISMATCH,
                               "vulkan: FUSED: step %u: op %u is not defined for floats", k, s->op);
    }
    return TF_OK;
}

/* The structure execute relies on: counts, params, dtypes, buffers of this engine. */
static tf_status check(vk_engine *e, const tf_exec *x)
{
    const char *name = tf__vk_prim_name(x->prim);
    int many = x->prim == TF_PRIM_CONCATENATE, fused = x->prim == TF_PRIM_FUSED;
    /* FUSED's params name its outputs; no primitive but CONCATENATE has over five inputs. */
    uint32_t n_out = fused && x->params != NULL ? fused_outputs(x->params) : 1;
    if (x->prim >= TF_PRIM_COUNT_ || x->n_outputs != n_out ||
        (!many && x->n_inputs > TF_FUSED_MAX_INPUTS) || (x->n_inputs > 0 && x->inputs == NULL) ||
        x->outputs == NULL)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION, "vulkan: %s: bad operand counts", name);
    int needs_params = x->prim != TF_PRIM_SELECT && x->prim != TF_PRIM_COPY &&
                       x->prim != TF_PRIM_DYNAMIC_SLICE && x->prim != TF_PRIM_DYNAMIC_UPDATE_SLICE;
    if (needs_params && x->params == NULL)
        return tf__vk_fail(e->host, TF_ERR_VALIDATION, "vulkan: %s: params are NULL", name);
    tf_status st = fused ? check_fused(e, x) : TF_OK;
    if (st != TF_OK)
        return st;
    uint32_t dt[MAX_OPS + 1];
    uint32_t n = 0;
    for (uint32_t i = 0; i < x->n_inputs; i++) {
        /* CONCATENATE (any number of inputs): one dtype, checked here, then as a pair. */
        if (many && x->inputs[i]->dtype != x->outputs[0]->dtype)
            return tf__vk_fail(e->host, TF_ERR_DTYPE_MISMATCH,
                               "vulkan: CONCATENATE: input %u has another dtype than the output",
                               i);
        if (!many)
            dt[n++] = x->inputs[i]->dtype;
    }
    if (many)
        dt[n++] = x->outputs[0]->dtype;
    for (uint32_t i = 0; i < n_out; i++)
        dt[n++] = x->outputs[i]->dtype;
    if (!tf__vk_supports(e, x->prim, needs_params ? exec_op(x) : 0, dt, n))
        return tf__vk_fail(e->host, TF_ERR_UNSUPPORTED,
                           "vulkan: %s (op %u) is not supported for these dtypes on \"%s\"", name,
                           exec_op(x), e->phys->info.name);
    for (uint32_t i = 0; i < x->n_inputs + n_out; i++) {
        const tf_operand *op = i < x->n_inputs ? x->inputs[i] : x->outputs[i - x->n_inputs];
        if (op->buffer == NULL || op->rank > TF_MAX_RANK)
            return tf__vk_fail(e->host, TF_ERR_PLACEMENT,
                               "vulkan: %s: operand %u is not in this engine's memory", name, i);
    }
    return TF_OK;
}

tf_status tf__vk_execute(vk_engine *e, const tf_exec *x)
{
    tf_status st = check(e, x);
    if (st != TF_OK)
        return st;
    switch (x->prim) {
    case TF_PRIM_FILL: return exec_fill(e, x);
    case TF_PRIM_IOTA: return exec_iota(e, x);
    case TF_PRIM_COPY: return tf__vk_copy_op(e, x->outputs[0], x->inputs[0]);
    case TF_PRIM_UNARY:
    case TF_PRIM_BINARY:
    case TF_PRIM_COMPARE:
        return exec_family(e, x, family_base(x->prim), exec_op(x), (vk_push){0, 0, 0, 0});
    case TF_PRIM_SELECT: return exec_select(e, x);
    case TF_PRIM_CONVERT: return exec_convert(e, x);
    case TF_PRIM_REDUCE: return exec_reduce(e, x);
    case TF_PRIM_DOT_GENERAL: return tf__vk_exec_dot_general(e, x);
    case TF_PRIM_PAD: return exec_pad(e, x);
    case TF_PRIM_CONCATENATE: return exec_concatenate(e, x);
    case TF_PRIM_DYNAMIC_SLICE: return exec_dynamic_slice(e, x);
    case TF_PRIM_DYNAMIC_UPDATE_SLICE: return exec_dynamic_update_slice(e, x);
    case TF_PRIM_GATHER: return exec_gather(e, x);
    case TF_PRIM_SCATTER: return exec_scatter(e, x);
    case TF_PRIM_FUSED: return exec_fused(e, x);
    }
    return tf__vk_fail(e->host, TF_ERR_UNSUPPORTED, "vulkan: the engine has no kernel for %s",
                       tf__vk_prim_name(x->prim));
}
