#version 450
/*
 * UNARY: out (0) = f(in (1)); the op (tf_unary_op) is the specialisation
 * constant OP, so each op compiles to its own straight-line pipeline.
 * Float builds (S_F32/S_F64) hold every float op: f32 on GLSL built-ins,
 * f64 on math64.glsl (GLSL defines no double exp, log, sin, ...). S_I32/S_I64:
 * NEG, ABS, SIGN, SQUARE, wrapping. S_B8: LOGICAL_NOT.
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
#define F S
#include "math.glsl"

#if defined(S_F64)
#include "math64.glsl"
#endif

#if defined(S_F32)
/* erf: Taylor series below 2 (terms shrink fast, relative error ~1 ulp), else
   1 - erfc by its continued fraction (erfc < 5e-3 there, so its error is tiny). */
float f_erf(float v)
{
    float a = abs(v);
    if (isnan(v))
        return v;
    if (a < 2.0) {
        float x2 = a * a, term = a, sum = a;
        for (int n = 1; n < 40; n++) {
            term *= -x2 / float(n);
            float add = term / float(2 * n + 1);
            sum += add;
            if (abs(add) < 1e-9 * abs(sum))
                break;
        }
        return sign(v) * sum * 1.1283791670955126;
    }
    if (a > 10.0)
        return sign(v);
    float cf = a;
    for (int k = 60; k >= 1; k--)
        cf = a + float(k) * 0.5 / cf;
    float erfc = exp(-a * a) / (cf * 1.7724538509055160);
    return sign(v) * (1.0 - erfc);
}

float f_expm1(float v)
{
    float u = exp(v);
    if (u == 1.0)
        return v;
    float um1 = u - 1.0;
    if (um1 == -1.0 || isinf(u))
        return um1;
    return um1 * v / log(u);
}

float f_log1p(float v)
{
    float u = 1.0 + v;
    if (u == 1.0)
        return v;
    if (isinf(u) || u <= 0.0)
        return log(u);
    return log(u) * v / (u - 1.0);
}

float f_tanh(float v)
{
    if (abs(v) > 9.0)
        return sign(v);
    return tanh(v);
}

float f_sigmoid(float v)
{
    if (v >= 0.0)
        return 1.0 / (1.0 + exp(-v));
    float e = exp(v);
    return e / (1.0 + e);
}
#endif

S apply(S v)
{
    switch (OP) {
    case 0: return -v;
    case 1: return abs(v);
    case 2: return isnan(v) ? v : (v > S(0) ? S(1) : (v < S(0) ? S(-1) : S(0)));
    case 10: return sqrt(v);
    case 11: return S(1) / sqrt(v);
    case 14: return S(1) / v;
    case 15: return v * v;
    case 17: return floor(v);
    case 18: return ceil(v);
#if defined(S_F32)
    case 3: return exp(v);
    case 4: return log(v);
    case 5: return f_expm1(v);
    case 6: return f_log1p(v);
    case 7: return sin(v);
    case 8: return cos(v);
    case 9: return f_tanh(v);
    case 12: return f_erf(v);
    case 13: return f_sigmoid(v);
#else
    case 3: return d_exp(v);
    case 4: return d_log(v);
    case 5: return d_expm1(v);
    case 6: return d_log1p(v);
    case 7: return d_sincos(v, false);
    case 8: return d_sincos(v, true);
    case 9: return d_tanh(v);
    case 12: return d_erf(v);
    case 13: return d_sigmoid(v);
#endif
    }
    return v;
}
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
