/*
 * complex.glsl - the complex operations of the c64 (S = vec2, R = float) and
 * c128 (S = dvec2, R = double) shaders, with engine_abi.h's "Complex dtypes"
 * semantics: C11 Annex G's special values and branch cuts (cexp, clog,
 * csqrt, csin, ccos, ctanh, carg), C's complex multiply and divide (Annex G
 * G.5.1: an infinite operand gives an infinite result, not NaN + NaN i) and
 * the ABI's POW, SIGN, RSQRT and RECIPROCAL.
 *
 * The real functions underneath are written here for f32 (r_exp, r_log,
 * r_log1p, r_sincos, r_atan01: series after an exact argument reduction, so
 * that c64 does not rest on the driver's built-ins, whose accuracy Vulkan
 * bounds loosely: sin and cos only absolutely) and come from math64.glsl for
 * f64 (atan is written here for both). Stable forms: clog of |z| near 1 is
 * log1p(x^2 + y^2 - 1) / 2 with that sum formed in double-word arithmetic
 * (exact fma products, two-sums), so |z| = 1 + tiny keeps its digits;
 * csqrt is Kahan's sqrt((|x| + |z|) / 2) with the other part a quotient (no
 * subtraction), the parts rescaled by powers of two near overflow and
 * underflow; ctanh is sinh x cosh x / (sinh^2 x + cos^2 y) (a sum of
 * squares: no cancellation) and, beyond |x| = 9 (f32) or 22 (f64), where
 * tanh x rounds to +-1, +-1 + 4 sin y cos y e^(-2|x|) i; sinh near 0 is its
 * series; cexp, csinh and ccosh split e^x as e^(x/2) e^(x/2) where e^x alone
 * would overflow but the product with cos y or sin y does not.
 * Every intermediate of a product or quotient is `precise`: C rounds each
 * product separately, and so must the shaders to match the CPU engine.
 */
#define F R
#include "math.glsl"
#if defined(S_C128)
#include "math64.glsl"
#endif

#if defined(S_C64)
const float R_PI_HI = 3.14159274e+00; /* float(pi) and the rest */
const float R_PI_LO = -8.74227766e-08;
const float R_PIO4_HI = 7.85398185e-01;
const float R_PIO4_LO = -2.18556941e-08;
const float R_OVF = 88.0;     /* e^x does not overflow below it */
const float R_TANH_BIG = 9.0; /* tanh x rounds to +-1 beyond it */
const float R_TINY = 1.08420217e-19; /* 2^-63: csqrt rescales parts below it */
const float R_HUGE = 1.84467441e+19; /* 2^64: and above it */
const int R_TINY_SCALE = 64;
const float R_SPLIT = 4097.0; /* 2^12 + 1 */
const int R_SINH_TERMS = 6;
const int R_ATAN_TERMS = 11;

/* e^x: x = k ln2 + r (ln2 in two parts, k ln2_hi exact), |r| <= ln2 / 2, e^r by its
   Taylor series: about an ulp. */
float r_exp(float x)
{
    if (isnan(x))
        return x;
    if (x > 88.72283935546875)
        return 1.0 / 0.0;
    if (x < -103.972084)
        return 0.0;
    float k = floor(x * 1.44269504 + 0.5);
    precise float r = (x - k * 0.693145751953125) - k * 1.42860677e-6;
    precise float p = 1.0 + r * (1.0 + r * (1.0 / 2.0 + r * (1.0 / 6.0 + r * (1.0 / 24.0 +
                      r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0 +
                      r * (1.0 / 40320.0))))))));
    int ki = int(k);
    return ldexp(ldexp(p, ki / 2), ki - ki / 2);
}

/* log m + e ln2 for x = 2^e m, m in [sqrt(1/2), sqrt(2)): log m = f - s (f - z P(z)),
   f = m - 1 (exact), s = f / (2 + f), z = s^2 (the atanh series). c is added before the
   rounding of the sum (log1p's correction). */
float r_log_parts(float m, int e, float c)
{
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

/* log x for x >= 0 (0: -inf; inf and NaN pass). */
float r_log(float x)
{
    if (x == 0.0)
        return -1.0 / 0.0;
    if (isinf(x) || isnan(x))
        return x;
    int e;
    float m = frexp(x, e);
    return r_log_parts(m, e, 0.0);
}

/* log(1 + v) for v >= -1 (as float_ops.glsl's f_log1p: u = 1 + v, c restores what the
   rounding of u lost). */
float r_log1p(float v)
{
    if (abs(v) < 5.9604645e-8)
        return v;
    if (v == -1.0)
        return -1.0 / 0.0;
    precise float u = 1.0 + v;
    precise float c = (v - (u - 1.0)) / u;
    int e;
    float m = frexp(u, e);
    return r_log_parts(m, e, c);
}

/* (sin x, cos x) for finite x: x - k pi/2, Taylor series on [-pi/4, pi/4]. */
vec2 r_sincos(float x)
{
    if (x == 0.0)
        return vec2(x, 1.0); /* sin keeps the zero's sign */
    float k = floor(x * 0.636619772 + 0.5);
    /* Cody and Waite's pi/2 in three parts (Cephes), the first two short, so that k times
       them is exact up to |x| ~ 8192 pi/2 (beyond, accuracy fades: no Payne-Hanek) */
    precise float r = ((x - k * 1.5703125) - k * 4.837512969970703125e-4) -
                      k * 7.54978995489188216e-8;
    precise float r2 = r * r;
    precise float s = r + r * r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 +
                      r2 * (1.0 / 362880.0))));
    precise float c = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0 +
                      r2 * (1.0 / 40320.0 + r2 * (-1.0 / 3628800.0)))));
    int q = int(mod(k, 4.0));
    switch (q) {
    case 0: return vec2(s, c);
    case 1: return vec2(c, -s);
    case 2: return vec2(-s, -c);
    }
    return vec2(-c, s);
}
#else
const double R_PI_HI = 3.141592653589793116LF;
const double R_PI_LO = 1.2246467991473532e-16LF;
const double R_PIO4_HI = 7.853981633974482790e-01LF;
const double R_PIO4_LO = 3.061616997868383018e-17LF;
const double R_OVF = 709.0LF;
const double R_TANH_BIG = 22.0LF;
const double R_TINY = 1.4916681462400413e-154LF; /* 2^-511 */
const double R_HUGE = 6.703903964971299e+153LF;  /* 2^511 */
const int R_TINY_SCALE = 600;
const double R_SPLIT = 134217729.0LF; /* 2^27 + 1 */
const int R_SINH_TERMS = 10;
const int R_ATAN_TERMS = 24;

double r_exp(double x) { return d_exp(x); }
double r_log(double x) { return d_log(x); }
double r_log1p(double x) { return d_log1p(x); }
dvec2 r_sincos(double x)
{
    if (x == 0.0LF)
        return dvec2(x, 1.0LF); /* sin keeps the zero's sign */
    return dvec2(d_sincos(x, false), d_sincos(x, true));
}
#endif

R r_inf() { return R(1) / R(0); }
R r_nan() { return R(0) / R(0); }
bool r_finite(R v) { return !isinf(v) && !isnan(v); }
/* The sign bit (GLSL has no copysign; a zero's sign is seen through 1 / z). */
bool r_neg(R v) { return v < R(0) || (v == R(0) && R(1) / v < R(0)); }
R r_copysign(R m, R s) { return r_neg(s) ? -abs(m) : abs(m); }

/* atan t for 0 <= t <= 1 (t > tan(pi/8): pi/4 + atan((t - 1) / (t + 1))): the series of
   u, |u| <= tan(pi/8), whose terms shrink by u^2 <= 0.172. */
R r_atan01(R t)
{
    bool big = t > R(0.41421356237309504880LF);
    precise R u = big ? (t - R(1)) / (t + R(1)) : t;
    precise R u2 = u * u, sum = R(0);
    for (int n = R_ATAN_TERMS; n >= 1; n--)
        sum = R(1) / R(2 * n + 1) - u2 * sum;
    precise R a = u - u * u2 * sum;
    precise R r = big ? R_PIO4_HI + (a + R_PIO4_LO) : a;
    return r;
}

/* atan2(y, x) in [-pi, pi] with C's signed zeros and infinities. */
R r_atan2(R y, R x)
{
    if (isnan(x) || isnan(y))
        return x + y;
    R pi = R_PI_HI, hpi = R_PI_HI * R(0.5), qpi = R_PI_HI * R(0.25);
    R res;
    if (y == R(0))
        res = r_neg(x) ? pi : R(0);
    else if (isinf(x) && isinf(y))
        res = r_neg(x) ? R(3) * qpi : qpi;
    else if (isinf(x))
        res = r_neg(x) ? pi : R(0);
    else if (isinf(y) || x == R(0))
        res = hpi;
    else {
        R ax = abs(x), ay = abs(y);
        /* the angle of (ax, ay) in [0, pi/2], then mirrored for x < 0 */
        precise R a = ay <= ax ? r_atan01(ay / ax)
                               : (hpi - r_atan01(ax / ay)) + R_PI_LO * R(0.5);
        precise R m = (pi - a) + R_PI_LO;
        res = r_neg(x) ? m : a;
    }
    return r_copysign(res, y);
}

/* v * v - p exactly, for p = v * v rounded (Dekker: v split by Veltkamp into halves
   whose products are exact; `precise` keeps the driver from folding them). */
R r_square_err(R v, R p)
{
    precise R t = v * R_SPLIT;
    precise R hi = t - (t - v);
    precise R lo = v - hi;
    precise R err = ((hi * hi - p) + R(2) * hi * lo) + lo * lo;
    return err;
}

/* hypot: inf when a part is infinite (even beside a NaN), NaN for NaN; otherwise both
   scaled by the larger one's power of two, so nothing overflows or underflows. */
R r_hypot(R x, R y)
{
    if (isinf(x) || isinf(y))
        return r_inf();
    if (isnan(x) || isnan(y))
        return x + y;
    R a = max(abs(x), abs(y)), b = min(abs(x), abs(y));
    if (a == R(0))
        return R(0);
    int e;
    frexp(a, e);
    R as = ldexp(a, -e), bs = ldexp(b, -e);
    return ldexp(sqrt(fma(as, as, bs * bs)), e);
}

/* sinh x and cosh x for finite x with |x| <= R_OVF; sinh by its series below 0.35, where
   (e - 1/e) / 2 would cancel. */
void r_sinhcosh(R x, out R sh, out R ch)
{
    R ax = abs(x);
    R e = r_exp(ax), ie = R(1) / e;
    ch = R(0.5) * (e + ie);
    if (ax < R(0.35)) {
        precise R x2 = ax * ax, term = ax, sum = ax;
        for (int n = 1; n <= R_SINH_TERMS; n++) {
            term *= x2 / R((2 * n) * (2 * n + 1));
            sum += term;
        }
        sh = x == R(0) ? x : r_copysign(sum, x);
    } else {
        sh = r_copysign(R(0.5) * (e - ie), x);
    }
}

/* ---- arithmetic -------------------------------------------------------------------- */

/* C's z * w (Annex G G.5.1, _Cmultd: NaN + NaN i recovered where an operand is
   infinite). */
S c_mul(S z, S w)
{
    R a = z.x, b = z.y, c = w.x, d = w.y;
    precise R ac = a * c, bd = b * d, ad = a * d, bc = b * c;
    precise R x = ac - bd, y = ad + bc;
    if (isnan(x) && isnan(y)) {
        bool recalc = false;
        if (isinf(a) || isinf(b)) {
            a = r_copysign(isinf(a) ? R(1) : R(0), a);
            b = r_copysign(isinf(b) ? R(1) : R(0), b);
            if (isnan(c)) c = r_copysign(R(0), c);
            if (isnan(d)) d = r_copysign(R(0), d);
            recalc = true;
        }
        if (isinf(c) || isinf(d)) {
            c = r_copysign(isinf(c) ? R(1) : R(0), c);
            d = r_copysign(isinf(d) ? R(1) : R(0), d);
            if (isnan(a)) a = r_copysign(R(0), a);
            if (isnan(b)) b = r_copysign(R(0), b);
            recalc = true;
        }
        if (!recalc && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {
            if (isnan(a)) a = r_copysign(R(0), a);
            if (isnan(b)) b = r_copysign(R(0), b);
            if (isnan(c)) c = r_copysign(R(0), c);
            if (isnan(d)) d = r_copysign(R(0), d);
            recalc = true;
        }
        if (recalc) {
            precise R xr = a * c - b * d, yr = a * d + b * c;
            x = r_inf() * xr;
            y = r_inf() * yr;
        }
    }
    return S(x, y);
}

/* C's z / w (Annex G G.5.1, _Cdivd: the divisor scaled by a power of two first). */
S c_div(S z, S w)
{
    R a = z.x, b = z.y, c = w.x, d = w.y;
    R m = max(abs(c), abs(d));
    int ilogbw = 0;
    if (r_finite(m) && m != R(0)) {
        int e;
        frexp(m, e);
        ilogbw = e - 1;
        c = ldexp(c, -ilogbw);
        d = ldexp(d, -ilogbw);
    }
    precise R denom = c * c + d * d;
    precise R xn = a * c + b * d, yn = b * c - a * d;
    precise R xq = xn / denom, yq = yn / denom;
    precise R x = ldexp(xq, -ilogbw), y = ldexp(yq, -ilogbw);
    if (isnan(x) && isnan(y)) {
        if (denom == R(0) && (!isnan(a) || !isnan(b))) {
            x = r_copysign(r_inf(), c) * a;
            y = r_copysign(r_inf(), c) * b;
        } else if ((isinf(a) || isinf(b)) && r_finite(c) && r_finite(d)) {
            a = r_copysign(isinf(a) ? R(1) : R(0), a);
            b = r_copysign(isinf(b) ? R(1) : R(0), b);
            precise R xr = a * c + b * d, yr = b * c - a * d;
            x = r_inf() * xr;
            y = r_inf() * yr;
        } else if (isinf(m) && r_finite(a) && r_finite(b)) {
            c = r_copysign(isinf(c) ? R(1) : R(0), c);
            d = r_copysign(isinf(d) ? R(1) : R(0), d);
            precise R xr = a * c + b * d, yr = b * c - a * d;
            /* 0 * xr, 0 * yr: zeros with their signs (a driver may fold 0 * v to +0) */
            x = r_copysign(R(0), xr);
            y = r_copysign(R(0), yr);
        }
    }
    return S(x, y);
}

/* ---- functions --------------------------------------------------------------------- */

R c_abs(S z) { return r_hypot(z.x, z.y); }
R c_arg(S z) { return r_atan2(z.y, z.x); }

/* z / |z|, 0 for 0, NaN for NaN; infinite parts count as +-1 and finite ones beside
   them as 0 (sign(inf + 2i) = 1). */
S c_sign(S z)
{
    R re = z.x, im = z.y;
    if (isinf(re) || isinf(im)) {
        re = r_copysign(isinf(re) ? R(1) : R(0), re);
        im = r_copysign(isinf(im) ? R(1) : R(0), im);
    }
    R m = r_hypot(re, im);
    if (m == R(0))
        return S(0);
    return S(re / m, im / m);
}

/* cexp: e^x (cos y + i sin y); Annex G's values at infinities and NaN. */
S c_exp(S z)
{
    R x = z.x, y = z.y;
    if (y == R(0))
        return S(r_exp(x), y); /* NaN + 0i gives NaN + 0i */
    if (isinf(x)) {
        if (!r_finite(y))
            return r_neg(x) ? S(R(0), r_copysign(R(0), y)) : S(x, r_nan());
        S sc = r_sincos(y);
        if (r_neg(x))
            return S(r_copysign(R(0), sc.y), r_copysign(R(0), sc.x));
        return S(x * sc.y, x * sc.x);
    }
    if (isnan(x) || !r_finite(y))
        return S(r_nan(), r_nan());
    S sc = r_sincos(y);
    if (x > R_OVF) { /* e^x overflows, e^x cos y may not */
        R h = r_exp(R(0.5) * x);
        return S((h * sc.y) * h, (h * sc.x) * h);
    }
    R e = r_exp(x);
    return S(e * sc.y, e * sc.x);
}

/* clog: log|z| + i arg z, cut along the negative reals; log 0 = -inf. */
S c_log(S z)
{
    R x = z.x, y = z.y;
    R ang = r_atan2(y, x);
    if (isinf(x) || isinf(y))
        return S(r_inf(), ang);
    if (isnan(x) || isnan(y))
        return S(r_nan(), r_nan());
    R a = max(abs(x), abs(y)), b = min(abs(x), abs(y));
    if (a == R(0))
        return S(-r_inf(), ang);
    if (a >= R(0.5) && a <= R(1.5)) {
        /* x^2 + y^2 - 1 in double-word arithmetic: exact products (Dekker's, not fma,
           which Vulkan lets a driver compute as a rounded product and sum), two-sums */
        precise R a2 = a * a, b2 = b * b;
        precise R a2e = r_square_err(a, a2), b2e = r_square_err(b, b2);
        precise R s = a2 - R(1);
        precise R sv = s - a2;
        precise R se = (a2 - (s - sv)) + (R(-1) - sv);
        precise R t = s + b2;
        precise R tv = t - s;
        precise R te = (s - (t - tv)) + (b2 - tv);
        precise R sum = t + (((te + se) + a2e) + b2e);
        return S(R(0.5) * r_log1p(sum), ang);
    }
    /* log a + log sqrt(1 + (b/a)^2): both terms of one sign once |z| > 1.5; below
       |z|^2 = 0.5 at most a bit cancels */
    R q = b / a;
    return S(r_log(a) + R(0.5) * r_log1p(q * q), ang);
}

/* csqrt: the principal root (real part >= 0), sqrt(-1 +- 0i) = +-i. */
S c_sqrt(S z)
{
    R x = z.x, y = z.y;
    if (isinf(y))
        return S(r_inf(), y);
    if (isnan(x))
        return S(x, r_nan());
    if (isinf(x)) {
        if (!r_neg(x))
            return S(x, isnan(y) ? y : r_copysign(R(0), y));
        return isnan(y) ? S(y, r_inf()) : S(R(0), r_copysign(r_inf(), y));
    }
    if (isnan(y))
        return S(r_nan(), r_nan());
    if (x == R(0) && y == R(0))
        return S(R(0), y);
    R a = max(abs(x), abs(y));
    int scale = 0; /* the result is scaled by 2^scale */
    if (a > R_HUGE) {
        x *= R(0.25);
        y *= R(0.25);
        scale = 1;
    } else if (a < R_TINY) {
        x = ldexp(x, R_TINY_SCALE);
        y = ldexp(y, R_TINY_SCALE);
        scale = -R_TINY_SCALE / 2;
    }
    R t = sqrt(R(0.5) * abs(x) + R(0.5) * r_hypot(x, y));
    R o = abs(y) / (R(2) * t);
    S r = r_neg(x) ? S(o, r_copysign(t, y)) : S(t, y / (R(2) * t));
    return S(ldexp(r.x, scale), ldexp(r.y, scale));
}

/* csinh: sinh x cos y + i cosh x sin y; Annex G's values at infinities and NaN. */
S c_sinh(S z)
{
    R x = z.x, y = z.y;
    if (r_finite(x) && r_finite(y)) {
        S sc = r_sincos(y);
        if (abs(x) > R_OVF) {
            R h = r_exp(R(0.5) * abs(x)), hh = R(0.5) * h;
            R re = (hh * sc.y) * h;
            /* cosh x sin 0 = 0 even where cosh x overflows */
            return S(r_neg(x) ? -re : re, y == R(0) ? y : (hh * sc.x) * h);
        }
        R sh, ch;
        r_sinhcosh(x, sh, ch);
        return S(sh * sc.y, ch * sc.x);
    }
    if (isinf(x)) {
        if (y == R(0))
            return S(x, y);
        if (!r_finite(y))
            return S(x, r_nan());
        S sc = r_sincos(y);
        return S(x * sc.y, r_inf() * sc.x);
    }
    if (x == R(0))
        return S(x, r_nan());
    if (y == R(0))
        return S(x, y); /* NaN + 0i */
    return S(r_nan(), r_nan());
}

/* ccosh: cosh x cos y + i sinh x sin y; Annex G's values at infinities and NaN. */
S c_cosh(S z)
{
    R x = z.x, y = z.y;
    if (r_finite(x) && r_finite(y)) {
        S sc = r_sincos(y);
        if (abs(x) > R_OVF) {
            R h = r_exp(R(0.5) * abs(x)), hh = R(0.5) * h;
            R im = (hh * sc.x) * h;
            if (y == R(0)) /* sinh x sin 0 = 0 even where sinh x overflows */
                im = r_neg(x) != r_neg(y) ? -R(0) : R(0);
            else if (r_neg(x))
                im = -im;
            return S((hh * sc.y) * h, im);
        }
        R sh, ch;
        r_sinhcosh(x, sh, ch);
        return S(ch * sc.y, sh * sc.x);
    }
    if (isinf(x)) {
        if (y == R(0))
            return S(r_inf(), r_neg(x) != r_neg(y) ? -R(0) : R(0));
        if (!r_finite(y))
            return S(r_inf(), r_nan());
        S sc = r_sincos(y);
        return S(r_inf() * sc.y, x * sc.x);
    }
    if (x == R(0))
        return S(r_nan(), R(0));
    if (y == R(0))
        return S(r_nan(), y); /* NaN +- 0i: the zero's sign is open; glibc keeps y's */
    return S(r_nan(), r_nan());
}

/* csin z = -i csinh(iz), ccos z = ccosh(iz), iz = -y + ix. */
S c_sin(S z)
{
    if (isinf(z.y) && !r_finite(z.x))
        return S(r_nan(), r_inf()); /* +-0 i inf's sign is open; glibc's is + */
    S w = c_sinh(S(-z.y, z.x));
    return S(w.y, -w.x);
}
S c_cos(S z) { return c_cosh(S(-z.y, z.x)); }

/* ctanh: (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y). */
S c_tanh(S z)
{
    R x = z.x, y = z.y;
    if (isinf(x)) {
        R one = r_copysign(R(1), x);
        if (!r_finite(y))
            return S(one, r_copysign(R(0), y));
        S sc = r_sincos(y);
        return S(one, r_copysign(R(0), sc.x * sc.y));
    }
    if (isnan(x))
        return S(x, y == R(0) ? y : r_nan());
    if (!r_finite(y))
        return x == R(0) ? S(x, r_nan()) : S(r_nan(), r_nan());
    S sc = r_sincos(y);
    if (abs(x) > R_TANH_BIG) {
        R e = r_exp(R(-2) * abs(x));
        return S(r_copysign(R(1), x), R(4) * sc.x * sc.y * e);
    }
    R sh, ch;
    r_sinhcosh(x, sh, ch);
    precise R den = sh * sh + sc.y * sc.y;
    precise R re = sh * ch / den, im = sc.x * sc.y / den;
    return S(re, im);
}

/* x^y = exp(y log x), x^0 = 1 for every x, 0^y = 0 for Re(y) > 0. */
S c_pow(S x, S y)
{
    if (y.x == R(0) && y.y == R(0))
        return S(R(1), R(0));
    if (x.x == R(0) && x.y == R(0) && y.x > R(0))
        return S(R(0), R(0));
    return c_exp(c_mul(y, c_log(x)));
}

/* 1 / z and 1 / sqrt z as C's (1 + 0i) / w. The 0 is a word of the push constants that
   is always 0 (pc.a2; no shader including this file uses it otherwise): with a literal 0,
   lavapipe folded copysign(inf, c) * 0 of the recovery of 1 / 0 to 0 (C gives NaN). */
S c_recip(S z) { return c_div(S(R(1), R(uintBitsToFloat(pc.a2))), z); }
S c_rsqrt(S z) { return c_div(S(R(1), R(uintBitsToFloat(pc.a2))), c_sqrt(z)); }
S c_square(S z) { return c_mul(z, z); }
