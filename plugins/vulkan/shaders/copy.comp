#version 450
/* COPY: strided output (binding 0) = strided input (binding 1), type-blind. */
#define NOPS 2
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { W o[]; };
layout(std430, binding = 1) readonly buffer In { W x[]; };

void main()
{
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        o[off[0]] = x[off[1]];
    }
}
