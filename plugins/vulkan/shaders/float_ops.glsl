/*
 * float_ops.glsl - the float UNARY and BINARY operations (tf_unary_op,
 * tf_binary_op numbers) of S = float or double, shared by unary.comp,
 * binary.comp and fused.comp so that a FUSED step computes exactly what the
 * primitive of the same op computes. unary.comp and binary.comp call
 * unary_float/binary_float with their specialisation constant OP, which
 * folds each switch to one case; fused.comp calls the op's own function
 * (u_exp, b_add, ...: the very function that case calls). f32 runs on GLSL built-ins with erf,
 * expm1, log1p, sigmoid, tanh and pow written here for accuracy (and C's
 * special cases); f64 on math64.glsl (GLSL defines no double exp, log, sin).
 * expm1 and log1p hold `precise` values, whose NoContraction decorations
 * vk_spirv.c drops with the functions a FUSED program does not call.
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

/*
 * expm1 and log1p. Every intermediate is `precise` (SPIR-V NoContraction): drivers may
 * otherwise reassociate (1 + v) - 1 to v and fold log(exp(v)) to v, which cancels the
 * corrections below (lavapipe did: expm1(-4.7e-10) gave -5.96e-8). precise covers
 * arithmetic only, not built-ins, so expm1 uses no exp: GLSL's is allowed 3 + 2|x| ulps and
 * a log(exp(v)) correction of it cannot be protected. v = k ln2 + r (ln2 in two parts,
 * k ln2_hi exact), expm1(r) by its Taylor series, then 2^k (1 + expm1(r)) - 1 as
 * 2^k expm1(r) + (2^k - 1), whose terms are exact for |k| <= 24: a rounding or two in all.
 */
float f_expm1(float v)
{
    if (isnan(v) || abs(v) < 5.9604645e-8) /* 2^-24: v + v^2 / 2 rounds to v */
        return v;
    if (v >= 88.72283935546875) /* the float above ln(FLT_MAX): e^v rounds to +inf */
        return 1.0 / 0.0;
    if (v < -18.0) /* e^v < 2^-25: rounds to -1 */
        return -1.0;
    precise float k = floor(v * 1.44269504 + 0.5);
    /* ln2 = 0.693145751953125 (9 low bits clear: k times it is exact) + 1.42860677e-6 */
    precise float r = (v - k * 0.693145751953125) - k * 1.42860677e-6; /* |r| <= ln2 / 2 */
    precise float q = 1.0 / 2.0 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 +
                      r * (1.0 / 720.0 + r * (1.0 / 5040.0 + r * (1.0 / 40320.0))))));
    precise float p = r + r * r * q; /* expm1(r), to r^8 / 8! */
    int ki = int(k);
    if (ki > 24)
        return ldexp(ldexp(p + 1.0, ki / 2), ki - ki / 2); /* the 1 is below half an ulp */
    precise float scaled = ldexp(p, ki) + (ldexp(1.0, ki) - 1.0);
    return scaled;
}

/*
 * log1p without log, whose error near 1 GLSL bounds only absolutely (2^-21; lavapipe's
 * log(1 - 2^-24) is -1.03e-7): u = 1 + v = 2^e m (m in [sqrt(1/2), sqrt(2))), so
 * log1p(v) = e ln2 + log(m) + c, where c = (v - (u - 1)) / u restores what rounding u lost
 * (u - 1 is exact) and log(m) = f - s (f - s^2 P(s^2)) with f = m - 1 (exact),
 * s = f / (2 + f): the atanh series 2s + 2s^3/3 + ... with 2s = f - s f.
 */
float f_log1p(float v)
{
    if (isnan(v) || abs(v) < 5.9604645e-8) /* 2^-24: v - v^2 / 2 rounds to v */
        return v;
    if (v <= -1.0)
        return v == -1.0 ? -1.0 / 0.0 : 0.0 / 0.0;
    if (isinf(v))
        return v;
    precise float u = 1.0 + v;
    precise float c = (v - (u - 1.0)) / u;
    int e;
    precise float m = frexp(u, e);
    if (m < 0.70710678) {
        m *= 2.0;
        e -= 1;
    }
    precise float f = m - 1.0;
    precise float s = f / (2.0 + f);
    precise float z = s * s;
    precise float lm = f - s * (f - z * (2.0 / 3.0 + z * (2.0 / 5.0 + z * (2.0 / 7.0 +
                       z * (2.0 / 9.0 + z * (2.0 / 11.0))))));
    precise float k = float(e);
    precise float r = k * 0.693145751953125 + (lm + (c + k * 1.42860677e-6));
    return r;
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

/* The float ops, one function each; X(number, function) lists them by tf_unary_op and
   tf_binary_op number (fused.comp wraps each one). */
#define FLOAT_UNARY_OPS(X) \
    X(0, u_neg) X(1, u_abs) X(2, u_sign) X(3, u_exp) X(4, u_log) X(5, u_expm1) X(6, u_log1p) \
    X(7, u_sin) X(8, u_cos) X(9, u_tanh) X(10, u_sqrt) X(11, u_rsqrt) X(12, u_erf) \
    X(13, u_sigmoid) X(14, u_recip) X(15, u_square) X(17, u_floor) X(18, u_ceil)
#define FLOAT_BINARY_OPS(X) \
    X(0, b_add) X(1, b_sub) X(2, b_mul) X(3, b_div) X(4, b_pow) X(5, b_max) X(6, b_min) \
    X(7, b_rem)

S u_neg(S v) { return -v; }
S u_abs(S v) { return abs(v); }
/* sign(+-0) = +0: abs(v) of a zero (a plain 0 constant may be folded into GLSL's sign,
   which keeps the zero's sign) */
S u_sign(S v) { return isnan(v) ? v : (v > S(0) ? S(1) : (v < S(0) ? S(-1) : abs(v))); }
S u_sqrt(S v) { return sqrt(v); }
S u_rsqrt(S v) { return S(1) / sqrt(v); }
S u_recip(S v) { return S(1) / v; }
S u_square(S v) { return v * v; }
S u_floor(S v) { return floor(v); }
S u_ceil(S v) { return ceil(v); }
#if defined(S_F32)
S u_exp(S v) { return exp(v); }
S u_log(S v) { return log(v); }
S u_expm1(S v) { return f_expm1(v); }
S u_log1p(S v) { return f_log1p(v); }
S u_sin(S v) { return sin(v); }
S u_cos(S v) { return cos(v); }
S u_tanh(S v) { return f_tanh(v); }
S u_erf(S v) { return f_erf(v); }
S u_sigmoid(S v) { return f_sigmoid(v); }
S b_pow(S x, S y) { return f_pow(x, y); }
#else
S u_exp(S v) { return d_exp(v); }
S u_log(S v) { return d_log(v); }
S u_expm1(S v) { return d_expm1(v); }
S u_log1p(S v) { return d_log1p(v); }
S u_sin(S v) { return d_sincos(v, false); }
S u_cos(S v) { return d_sincos(v, true); }
S u_tanh(S v) { return d_tanh(v); }
S u_erf(S v) { return d_erf(v); }
S u_sigmoid(S v) { return d_sigmoid(v); }
S b_pow(S x, S y) { return d_pow(x, y); }
#endif
S b_add(S x, S y) { return x + y; }
S b_sub(S x, S y) { return x - y; }
S b_mul(S x, S y) { return x * y; }
S b_div(S x, S y) { return x / y; }
S b_max(S x, S y) { return f_max(x, y); }
S b_min(S x, S y) { return f_min(x, y); }
S b_rem(S x, S y) { return f_fmod(x, y); }

#define UNARY_CASE(n, f) \
    case n: return f(v);
#define BINARY_CASE(n, f) \
    case n: return f(x, y);

S unary_float(uint op, S v)
{
    switch (op) {
        FLOAT_UNARY_OPS(UNARY_CASE)
    }
    return v;
}

S binary_float(uint op, S x, S y)
{
    switch (op) {
        FLOAT_BINARY_OPS(BINARY_CASE)
    }
    return x;
}
