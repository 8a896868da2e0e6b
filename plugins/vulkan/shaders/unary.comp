#version 450
/*
 * UNARY: out (0) = f(in (1)); the op (tf_unary_op) is the specialisation
 * constant OP, so each op compiles to its own straight-line pipeline.
 * Float builds (S_F32/S_F64) hold every float op, in float_ops.glsl (shared
 * with fused.comp): f32 on GLSL built-ins, f64 on math64.glsl (GLSL defines
 * no double exp, log, sin, ...). S_I32/S_I64: NEG, ABS, SIGN, SQUARE,
 * wrapping. S_B8: LOGICAL_NOT.
 */
#define NOPS 2
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { S o[]; };
layout(std430, binding = 1) readonly buffer In { S x[]; };
#if defined(VEC4) /* the same bindings, seen as vectors */
layout(std430, binding = 0) writeonly buffer Out4 { V4 o4[]; };
layout(std430, binding = 1) readonly buffer In4 { V4 x4[]; };
#endif

#if defined(S_F32) || defined(S_F64)
#include "float_ops.glsl"

S apply(S v) { return unary_float(OP, v); }
#elif defined(S_INT)
S apply(S v)
{
    switch (OP) {
    case 0: return -v;
    case 1: return v < S(0) ? -v : v;
    case 2: return v > S(0) ? S(1) : (v < S(0) ? S(-1) : S(0));
    case 15: return v * v;
    }
    return v;
}
#elif defined(S_B8)
S apply(S v) { return uint8_t(uint(v) == 0u ? 1u : 0u); }
#endif

void main()
{
#if defined(VEC4)
    VEC4_FOR_EACH(q) {
        V4 v = x4[VOFF(1) + int(q)];
        o4[VOFF(0) + int(q)] = V4(apply(v.x), apply(v.y), apply(v.z), apply(v.w));
    }
    VEC4_TAIL(t) o[P[9] + int(t)] = apply(x[P[18] + int(t)]);
#else
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        o[off[0]] = apply(x[off[1]]);
    }
#endif
}
