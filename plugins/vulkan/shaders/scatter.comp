#version 450
/*
 * SCATTER, computed per output element (no atomics, deterministic): out (0)
 * = base (1), then for every j along the scattered axis whose index (3)
 * names this element's coordinate, out = out + updates (2) (pc.a0 = 0, ADD)
 * or out = updates (pc.a0 = 1, REPLACE: the last j wins). Parameters: the
 * walk over out with every axis kept (P[0..44]; updates and index with
 * stride 0 along the axis), then P[45] the axis, P[46] the count of j,
 * P[47] the index stride and P[48] the updates stride along the axis,
 * P[49] out's extent along the axis, P[50..57] the index extents (an output
 * element beyond them on another axis gets no updates: ALONG_AXIS).
 * Every index is checked against [0, extent) (ERR_INDEX).
 */
#define NOPS 4
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { S o[]; };
layout(std430, binding = 1) readonly buffer Base { S base[]; };
layout(std430, binding = 2) readonly buffer Upd { S upd[]; };
#ifdef IDX_I64
layout(std430, binding = 3) readonly buffer Index { uvec2 ix[]; };
#else
layout(std430, binding = 3) readonly buffer Index { int ix[]; };
#endif

void main()
{
    int axis = P[45], count = P[46];
    uint ext = uint(P[49]);
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        /* this element's coordinates: its own on the axis, and whether updates reach it */
        uint r = i;
        int c_axis = 0;
        bool reached = true;
        for (int k = 0; k < P[0]; k++) {
            uint e = uint(P[1 + k]);
            int c = int(r % e);
            r /= e;
            if (k == axis)
                c_axis = c;
            else if (c >= P[50 + k])
                reached = false;
        }
        S acc = base[off[1]];
        for (int j = 0; j < count && reached; j++) {
#ifdef IDX_I64
            uvec2 v = ix[off[3] + j * P[47]];
            bool ok = v.y == 0u && v.x < ext;
            int t = int(v.x);
#else
            int t = ix[off[3] + j * P[47]];
            bool ok = t >= 0 && uint(t) < ext;
#endif
            if (!ok) {
                raise_error(ERR_INDEX, i);
                continue;
            }
            if (t == c_axis) {
                S u = upd[off[2] + j * P[48]];
#if defined(S_B8)
                acc = pc.a0 == 0u ? S(uint(acc) | uint(u)) : u; /* ADD on bool is or */
#else
                acc = pc.a0 == 0u ? acc + u : u;
#endif
            }
        }
        o[off[0]] = acc;
    }
}
