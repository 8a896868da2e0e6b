#version 450
/*
 * CONVERT: out (0, dtype D) = in (1, dtype S). a0 != 0: checked, so any
 * element whose value would change raises ERR_OUT_OF_RANGE (the output is
 * then unspecified). Unchecked float -> int truncates toward zero and
 * saturates (NaN gives 0); i64 -> i32 keeps the low 32 bits; to bool is
 * x != 0; bool is 0 or 1.
 */
#define NOPS 2
/* A complex side converts as its part dtype: real values become x + 0i, each part of a
   complex value converts as a float (checked too), complex to real or integer takes the
   real part (unchecked only: the host refuses the checked form), to bool is z != 0. */
#if defined(S_C64)
#define S_F32
#define SRC_CPLX vec2
#elif defined(S_C128)
#define S_F64
#define SRC_CPLX dvec2
#endif
#if defined(D_C64)
#define D_F32
#define DST_CPLX vec2
#elif defined(D_C128)
#define D_F64
#define DST_CPLX dvec2
#endif
#include "common.glsl"
#if defined(DST_CPLX)
layout(std430, binding = 0) writeonly buffer Out { DST_CPLX o[]; };
#else
layout(std430, binding = 0) writeonly buffer Out { D o[]; };
#endif
#if defined(SRC_CPLX)
layout(std430, binding = 1) readonly buffer In { SRC_CPLX x[]; };
#else
layout(std430, binding = 1) readonly buffer In { S x[]; };
#endif

bool bad = false;

#if defined(S_F32) || defined(S_F64)
#define SRC_FLOAT 1
#endif

#if defined(D_B8)
D convert(S v)
{
#if defined(S_B8)
    return v;
#else
    bad = bad || (v != S(0) && v != S(1));
    return uint8_t(v != S(0) ? 1u : 0u);
#endif
}
#elif defined(D_I32)
D convert(S v)
{
#if defined(SRC_FLOAT)
    bad = bad || isnan(v) || floor(v) != v || v >= S(2147483648.0) || v < S(-2147483648.0);
    if (isnan(v))
        return 0;
    if (v >= S(2147483648.0))
        return 2147483647;
    if (v <= S(-2147483648.0))
        return int(0x80000000u);
    return int(v);
#elif defined(S_B8)
    return int(uint(v));
#elif defined(S_I64)
    bad = bad || v < int64_t(-2147483648l) || v > int64_t(2147483647l);
    return int(v); /* keeps the low 32 bits */
#else
    return v;
#endif
}
#elif defined(D_I64)
D convert(S v)
{
#if defined(SRC_FLOAT)
    /* 2^63 is exact in both float types; -2^63 is the smallest int64. */
    bad = bad || isnan(v) || floor(v) != v || v >= S(9223372036854775808.0) ||
          v < S(-9223372036854775808.0);
    if (isnan(v))
        return int64_t(0);
    if (v >= S(9223372036854775808.0))
        return 9223372036854775807l;
    if (v <= S(-9223372036854775808.0))
        return -9223372036854775807l - 1l;
    return int64_t(v);
#elif defined(S_B8)
    return int64_t(uint(v));
#else
    return int64_t(v);
#endif
}
#elif defined(D_F32) || defined(D_F64)
/*
 * Whether a float of `bits` significant bits (limit = 2^bits) holds the
 * integer v exactly:
 * its magnitude, trailing zeros dropped, fits. (Comparing v with the
 * integer the rounded float converts back to is the same test, but a
 * compiler may fold that round trip away.)
 */
bool int_exact(int64_t v, uint64_t limit) /* limit: 2^bits */
{
    uint64_t a = uint64_t(v < 0l ? -v : v); /* -INT64_MIN wraps to INT64_MIN: 2^63 */
    while (a >= limit && (a & 1ul) == 0ul)
        a = a / 2ul;
    return a < limit;
}

bool int32_exact(int v) /* the same for i32 -> f32, in 32 bits */
{
    uint a = uint(v < 0 ? -v : v); /* -INT32_MIN wraps to INT32_MIN: 2^31 */
    while (a >= 16777216u && (a & 1u) == 0u)
        a = a / 2u;
    return a < 16777216u;
}
#endif

#if defined(D_F32)
D convert(S v)
{
#if defined(S_B8)
    return float(uint(v));
#elif defined(S_I32)
    bad = bad || !int32_exact(v);
    return float(v);
#elif defined(S_I64)
    bad = bad || !int_exact(v, 16777216ul);
    return float(v);
#elif defined(S_F64)
    float f = float(v);
    bad = bad || (isinf(f) && !isinf(v));
    return f;
#else
    return v;
#endif
}
#elif defined(D_F64)
D convert(S v)
{
#if defined(S_B8)
    return double(uint(v));
#elif defined(S_I64)
    bad = bad || !int_exact(v, 9007199254740992ul);
    return double(v);
#else
    return double(v);
#endif
}
#endif

void main()
{
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        bad = false;
#if defined(SRC_CPLX) && defined(DST_CPLX)
        SRC_CPLX v = x[off[1]];
        o[off[0]] = DST_CPLX(convert(v.x), convert(v.y));
#elif defined(SRC_CPLX) && defined(D_B8)
        SRC_CPLX v = x[off[1]];
        o[off[0]] = uint8_t(v.x != S(0) || v.y != S(0) ? 1u : 0u);
#elif defined(SRC_CPLX)
        o[off[0]] = convert(x[off[1]].x);
#elif defined(DST_CPLX)
        o[off[0]] = DST_CPLX(convert(x[off[1]]), D(0));
#else
        o[off[0]] = convert(x[off[1]]);
#endif
        if (bad && pc.a0 != 0u)
            raise_error(ERR_OUT_OF_RANGE, i);
    }
}
