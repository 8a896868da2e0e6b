#version 450
/* SELECT: out (0) = cond (1, bool) ? a (2) : b (3), type-blind on a, b, out. */
#define NOPS 4
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { W o[]; };
layout(std430, binding = 1) readonly buffer Cond { uint8_t c[]; };
layout(std430, binding = 2) readonly buffer A { W a[]; };
layout(std430, binding = 3) readonly buffer B { W b[]; };

void main()
{
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        o[off[0]] = uint(c[off[1]]) != 0u ? a[off[2]] : b[off[3]];
    }
}
