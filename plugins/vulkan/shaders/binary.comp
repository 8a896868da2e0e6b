#version 450
/*
 * BINARY: out (0) = f(a (1), b (2)); the op (tf_binary_op) is OP. Floats:
 * IEEE arithmetic, NaN-propagating MAX/MIN, C fmod for REM, C pow for POW
 * (f64 on math64.glsl); the float ops are in float_ops.glsl, shared with
 * fused.comp. I32/I64: wrapping ADD/SUB/MUL, truncating DIV and
 * REM with the dividend's sign (division by zero raises ERR_DIV_ZERO), POW
 * by squaring, MAX/MIN, bitwise AND/OR/XOR. B8: AND/OR/XOR/MAX/MIN as logic.
 */
#define NOPS 3
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { S o[]; };
layout(std430, binding = 1) readonly buffer A { S a[]; };
layout(std430, binding = 2) readonly buffer B { S b[]; };
#if defined(VEC4) /* the same bindings, seen as vectors */
layout(std430, binding = 0) writeonly buffer Out4 { V4 o4[]; };
layout(std430, binding = 1) readonly buffer A4 { V4 a4[]; };
layout(std430, binding = 2) readonly buffer B4 { V4 b4[]; };
#endif

#if defined(S_F32) || defined(S_F64)
#include "float_ops.glsl"

S apply(S x, S y, uint i) { return binary_float(OP, x, y); }
#elif defined(S_INT)
S i_div(S x, S y, uint i)
{
    if (y == S(0)) {
        raise_error(ERR_DIV_ZERO, i);
        return S(0);
    }
    return y == S(-1) ? -x : x / y;
}

S i_pow(S x, S y, uint i)
{
    if (y < S(0)) {
        if (x == S(0)) {
            raise_error(ERR_DIV_ZERO, i);
            return S(0);
        }
        return x == S(1) ? S(1) : (x == S(-1) ? ((y & S(1)) != S(0) ? S(-1) : S(1)) : S(0));
    }
    S r = S(1);
    while (y > S(0)) {
        if ((y & S(1)) != S(0))
            r *= x;
        x *= x;
        y >>= 1;
    }
    return r;
}

S apply(S x, S y, uint i)
{
    switch (OP) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return i_div(x, y, i);
    case 4: return i_pow(x, y, i);
    case 5: return max(x, y);
    case 6: return min(x, y);
    case 7: return y == S(0) ? i_div(x, y, i) : x - i_div(x, y, i) * y;
    case 8: return x & y;
    case 9: return x | y;
    case 10: return x ^ y;
    }
    return x;
}
#elif defined(S_B8)
S apply(S x, S y, uint i)
{
    uint u = uint(x), v = uint(y);
    switch (OP) {
    case 5:
    case 9: return uint8_t(u | v);
    case 6:
    case 8: return uint8_t(u & v);
    case 10: return uint8_t(u ^ v);
    }
    return x;
}
#endif

void main()
{
#if defined(VEC4)
    VEC4_FOR_EACH(q) {
        V4 u = a4[VOFF(1) + int(q)], v = b4[VOFF(2) + int(q)];
        uint i = 4u * q; /* the element index an error reports */
        o4[VOFF(0) + int(q)] = V4(apply(u.x, v.x, i), apply(u.y, v.y, i + 1u),
                                  apply(u.z, v.z, i + 2u), apply(u.w, v.w, i + 3u));
    }
    VEC4_TAIL(t) o[P[9] + int(t)] = apply(a[P[18] + int(t)], b[P[27] + int(t)], t);
#else
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        o[off[0]] = apply(a[off[1]], b[off[2]], i);
    }
#endif
}
