#version 450
/* COPY: strided output (binding 0) = strided input (binding 1), type-blind. */
#define NOPS 2
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { W o[]; };
layout(std430, binding = 1) readonly buffer In { W x[]; };
#if defined(VEC4) /* the same bindings, seen as vectors */
layout(std430, binding = 0) writeonly buffer Out4 { V4 o4[]; };
layout(std430, binding = 1) readonly buffer In4 { V4 x4[]; };
#endif

void main()
{
#if defined(VEC4)
    VEC4_FOR_EACH(q) o4[VOFF(0) + int(q)] = x4[VOFF(1) + int(q)];
    VEC4_TAIL(t) o[P[9] + int(t)] = x[P[18] + int(t)];
#else
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        o[off[0]] = x[off[1]];
    }
#endif
}
