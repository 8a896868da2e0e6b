/*
 * float_ops.glsl - the float UNARY and BINARY operations (tf_unary_op,
 * tf_binary_op numbers) of S = float or double, shared by unary.comp,
 * binary.comp and fused.comp so that a FUSED step computes exactly what the
 * primitive of the same op computes. unary.comp and binary.comp pass their
 * specialisation constant OP, which folds each switch to one case; fused.comp
 * passes the step's op read at run time. f32 runs on GLSL built-ins with erf,
 * expm1, log1p, sigmoid, tanh and pow written here for accuracy (and C's
 * special cases); f64 on math64.glsl (GLSL defines no double exp, log, sin).
 */
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

#if defined(S_F32)
bool is_odd_integer(float y) { return floor(y) == y && abs(y) < 16777216.0 && mod(y, 2.0) == 1.0; }

float f_pow(float x, float y)
{
    if (y == 0.0 || x == 1.0)
        return 1.0;
    if (isnan(x) || isnan(y))
        return x + y;
    float ax = abs(x);
    if (x == 0.0) {
        float r = y < 0.0 ? 1.0 / 0.0 : 0.0;
        return (is_odd_integer(y) && 1.0 / x < 0.0) ? -r : r;
    }
    if (isinf(y))
        return ax == 1.0 ? 1.0 : ((ax > 1.0) == (y > 0.0) ? 1.0 / 0.0 : 0.0);
    float r = isinf(ax) ? (y > 0.0 ? ax : 0.0) : exp2(y * log2(ax));
    if (x < 0.0) {
        if (floor(y) != y)
            return 0.0 / 0.0 + y;
        return is_odd_integer(y) ? -r : r;
    }
    return r;
}
#endif

S unary_float(uint op, S v)
{
    switch (op) {
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

S binary_float(uint op, S x, S y)
{
    switch (op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x / y;
#if defined(S_F32)
    case 4: return f_pow(x, y);
#else
    case 4: return d_pow(x, y);
#endif
    case 5: return f_max(x, y);
    case 6: return f_min(x, y);
    case 7: return f_fmod(x, y);
    }
    return x;
}
