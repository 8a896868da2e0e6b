#version 450
/* FILL: every element of a strided output (binding 0) = the value's bits in a0/a1. */
#define NOPS 1
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { W o[]; };

void main()
{
#if defined(W_64)
    W v = uvec2(pc.a0, pc.a1);
#else
    W v = W(pc.a0);
#endif
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        o[off[0]] = v;
    }
}
