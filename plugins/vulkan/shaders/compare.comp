#version 450
/* COMPARE: out (0, bool) = a (1) OP b (2); NaN compares unequal to everything. Complex
   (S_C64, S_C128): EQ and NE only, both parts compared. */
#define NOPS 3
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { uint8_t o[]; };
layout(std430, binding = 1) readonly buffer A { S a[]; };
layout(std430, binding = 2) readonly buffer B { S b[]; };

#if defined(S_B8)
#define C uint
#else
#define C S
#endif

#if defined(S_CPLX)
bool apply(C x, C y) { return OP == 1u ? x != y : x == y; }
#else
bool apply(C x, C y)
{
    switch (OP) {
    case 0: return x == y;
    case 1: return x != y;
    case 2: return x < y;
    case 3: return x <= y;
    case 4: return x > y;
    case 5: return x >= y;
    }
    return false;
}
#endif

void main()
{
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        o[off[0]] = uint8_t(apply(C(a[off[1]]), C(b[off[2]])) ? 1u : 0u);
    }
}
