#version 450
/* FILL: every element of a strided output (binding 0) = the value's bits in a0/a1
   (W_128: in P[18..21], after the walk). */
#define NOPS 1
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { W o[]; };
#if defined(VEC4) /* the same binding, seen as vectors */
layout(std430, binding = 0) writeonly buffer Out4 { V4 o4[]; };
#endif

void main()
{
#if defined(W_128) /* the value's four words follow the walk (P[18..21]) */
    W v = uvec4(uint(P[18]), uint(P[19]), uint(P[20]), uint(P[21]));
#elif defined(W_64)
    W v = uvec2(pc.a0, pc.a1);
#else
    W v = W(pc.a0);
#endif
#if defined(VEC4)
    VEC4_FOR_EACH(q) o4[VOFF(0) + int(q)] = V4(v);
    VEC4_TAIL(t) o[P[9] + int(t)] = v;
#else
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        o[off[0]] = v;
    }
#endif
}
