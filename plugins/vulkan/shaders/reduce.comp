#version 450
/*
 * REDUCE: out (0, dense from P[35]) = reduction OP (tf_reduce_op) of in (1)
 * over the reduced axes. Parameters (P): P[0] kept rank, P[1..8] kept
 * extents, P[9] input offset, P[10..17] input strides of the kept axes,
 * P[18] reduced rank, P[19..26] reduced extents, P[27..34] input strides of
 * the reduced axes, P[35] output offset. pc.n outputs, pc.a0 elements per
 * output (R). pc.a1 = 0: one workgroup per output, a strided partial per
 * invocation, then a tree in shared memory; pc.a1 = 1: one invocation per
 * output (small R). Float sums accumulate in the dtype itself; complex
 * (S_C64, S_C128): SUM and PROD.
 *
 * Built with -DSUBGROUP, the workgroup tree starts inside each subgroup
 * (xor-shuffles, with the same NaN-propagating combine), so only one value
 * per subgroup goes through shared memory.
 */
#define NOPS 1
#include "common.glsl"
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
layout(std430, binding = 0) writeonly buffer Out { S o[]; };
layout(std430, binding = 1) readonly buffer In { S x[]; };

#if defined(S_F32) || defined(S_F64)
#define A S
#define F S
#include "math.glsl"
A ident()
{
    switch (OP) {
    case 1: return A(1);
    case 2: return A(-1) / A(0);
    case 3: return A(1) / A(0);
    }
    return A(0);
}
A combine(A u, A v)
{
    switch (OP) {
    case 1: return u * v;
    case 2: return f_max(u, v);
    case 3: return f_min(u, v);
    }
    return u + v;
}
#define LOAD(k) x[k]
#define STORE(v) S(v)
#elif defined(S_INT)
#define A S
#if defined(S_I64)
#define INT_LO (-9223372036854775807l - 1l)
#define INT_HI 9223372036854775807l
#else
#define INT_LO int(0x80000000u)
#define INT_HI 0x7fffffff
#endif
A ident()
{
    switch (OP) {
    case 1: return A(1);
    case 2: return INT_LO;
    case 3: return INT_HI;
    }
    return A(0);
}
A combine(A u, A v)
{
    switch (OP) {
    case 1: return u * v;
    case 2: return max(u, v);
    case 3: return min(u, v);
    }
    return u + v;
}
#define LOAD(k) x[k]
#define STORE(v) S(v)
#elif defined(S_CPLX)
/* complex SUM from -0 - 0i (the exact neutral element, as the CPU engine), PROD by C's
   product */
#define A S
#include "complex.glsl"
A ident() { return OP == 1u ? A(R(1), R(0)) : A(-R(0), -R(0)); }
A combine(A u, A v) { return OP == 1u ? c_mul(u, v) : u + v; }
#define LOAD(k) x[k]
#define STORE(v) (v)
#elif defined(S_B8)
#define A uint
A ident() { return OP == 3 ? 1u : 0u; }
A combine(A u, A v) { return OP == 3 ? (u & v) : (u | v); }
#define LOAD(k) uint(x[k])
#define STORE(v) uint8_t(v)
#endif

shared A partial[WG];

#ifdef SUBGROUP
/* i64 is shuffled as two 32-bit halves (64-bit integer shuffles need an extra feature). */
A shuffle_xor(A v, uint s)
{
#if defined(S_I64)
    ivec2 h = unpackInt2x32(v);
    return packInt2x32(ivec2(subgroupShuffleXor(h.x, s), subgroupShuffleXor(h.y, s)));
#else
    return subgroupShuffleXor(v, s);
#endif
}
#endif

int kept_offset(uint g)
{
    int off = P[9];
    uint r = g;
    for (int k = 0; k < P[0]; k++) {
        uint e = uint(P[1 + k]);
        off += int(r % e) * P[10 + k];
        r /= e;
    }
    return off;
}

int reduced_offset(uint t)
{
    int off = 0;
    uint r = t;
    for (int k = 0; k < P[18]; k++) {
        uint e = uint(P[19 + k]);
        off += int(r % e) * P[27 + k];
        r /= e;
    }
    return off;
}

A reduce_range(int base, uint first, uint step)
{
    A acc = ident();
    for (uint t = first; t < pc.a0; t += step)
        acc = combine(acc, LOAD(base + reduced_offset(t)));
    return acc;
}

void main()
{
    if (pc.a1 == 1u) {
        for (uint g = gl_GlobalInvocationID.x; g < pc.n; g += gl_NumWorkGroups.x * WG)
            o[P[35] + int(g)] = STORE(reduce_range(kept_offset(g), 0u, 1u));
        return;
    }
    uint lid = gl_LocalInvocationID.x;
    for (uint g = gl_WorkGroupID.x; g < pc.n; g += gl_NumWorkGroups.x) {
        A v = reduce_range(kept_offset(g), lid, WG);
#ifdef SUBGROUP
        for (uint s = gl_SubgroupSize / 2; s > 0; s >>= 1)
            v = combine(v, shuffle_xor(v, s));
        if (subgroupElect())
            partial[gl_SubgroupID] = v;
        barrier();
        if (gl_SubgroupID == 0) {
            v = ident();
            for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize)
                v = combine(v, partial[i]);
            for (uint s = gl_SubgroupSize / 2; s > 0; s >>= 1)
                v = combine(v, shuffle_xor(v, s));
            if (subgroupElect())
                o[P[35] + int(g)] = STORE(v);
        }
#else
        partial[lid] = v;
        barrier();
        for (uint s = WG / 2; s > 0; s >>= 1) {
            if (lid < s)
                partial[lid] = combine(partial[lid], partial[lid + s]);
            barrier();
        }
        if (lid == 0)
            o[P[35] + int(g)] = STORE(partial[0]);
#endif
        barrier();
    }
}
