#version 450
/*
 * IOTA: out (0, dense from its offset) [i] = the index along the axis, where
 * a0 = product of the extents before the axis and a1 = the axis' extent.
 */
#define NOPS 1
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { D o[]; };

void main()
{
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        o[off[0]] = D((i / pc.a0) % pc.a1);
    }
}
