#version 450
/*
 * DYNAMIC_SLICE / DYNAMIC_UPDATE_SLICE: a copy dst (0) = src (1) over the
 * small shape (the slice or the update), where one side is shifted by the
 * start indices read from binding 2 (i32, or i64 with -DIDX_I64), each first
 * clamped to [0, big extent - small extent]. pc.a0 = 0 shifts src (slice),
 * 1 shifts dst (update). Parameters: the walk of common.glsl over the small
 * shape with every axis kept (P[0..26]), then P[27..34] the big extents,
 * P[35] the starts' offset and P[36] their stride.
 */
#define NOPS 2
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { W o[]; };
layout(std430, binding = 1) readonly buffer In { W x[]; };
#ifdef IDX_I64
layout(std430, binding = 2) readonly buffer Starts { uvec2 st[]; };
#else
layout(std430, binding = 2) readonly buffer Starts { int st[]; };
#endif

int clamped_start(int k)
{
    int hi = P[27 + k] - P[1 + k];
#ifdef IDX_I64
    uvec2 v = st[P[35] + k * P[36]];
    int sv = int(v.y) < 0 ? 0 : (v.y != 0u || v.x > uint(hi) ? hi : int(v.x));
#else
    int sv = st[P[35] + k * P[36]];
#endif
    return clamp(sv, 0, hi);
}

void main()
{
    int shift = 0;
    int side = int(pc.a0);
    for (int k = 0; k < P[0]; k++)
        shift += clamped_start(k) * P[10 + 9 * (1 - side) + k];
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        if (side == 0)
            o[off[0]] = x[off[1] + shift];
        else
            o[off[0] + shift] = x[off[1]];
    }
}
