#version 450
/*
 * DOT_GENERAL's matrix-vector path: y[r, b] = sum_p M[r, p, b] * v[p, b],
 * used when the output has one column (N = 1) or one row (M = 1, with the
 * roles of the operands swapped by the host). y (binding 0) is dense from
 * its offset: element r + b * R. Parameters (P): R, K, batch, matrix offset
 * and strides (r, p, b), vector offset and strides (p, b), y offset.
 * pc.a1 = 0: a workgroup per output element, strided partial sums and a
 * shared-memory tree (long K); 1: an invocation per output element.
 * Complex (S_C64, S_C128): pc.a2 bit 0 conjugates the matrix, bit 1 the
 * vector.
 */
#define NOPS 1
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { S y[]; };
layout(std430, binding = 1) readonly buffer Mat { S m[]; };
layout(std430, binding = 2) readonly buffer Vec { S v[]; };

shared S partial[WG];

S dot_range(uint g, int first, int step)
{
    int NR = P[0], K = P[1];
    int r = int(g % uint(NR)), b = int(g / uint(NR));
    int mb = P[3] + r * P[4] + b * P[6], vb = P[7] + b * P[9];
    S acc = S(0);
    for (int p = first; p < K; p += step) {
#if defined(S_INT)
        acc += m[mb + p * P[5]] * v[vb + p * P[8]];
#elif defined(S_CPLX)
        S u = m[mb + p * P[5]], w = v[vb + p * P[8]];
        if ((pc.a2 & 1u) != 0u)
            u.y = -u.y;
        if ((pc.a2 & 2u) != 0u)
            w.y = -w.y;
        acc = S(fma(u.x, w.x, fma(-u.y, w.y, acc.x)), fma(u.x, w.y, fma(u.y, w.x, acc.y)));
#else
        acc = fma(m[mb + p * P[5]], v[vb + p * P[8]], acc);
#endif
    }
    return acc;
}

void main()
{
    uint total = pc.n; /* R * batch */
    if (pc.a1 == 1u) {
        for (uint g = gl_GlobalInvocationID.x; g < total; g += gl_NumWorkGroups.x * WG)
            y[P[10] + int(g)] = dot_range(g, 0, 1);
        return;
    }
    uint lid = gl_LocalInvocationID.x;
    for (uint g = gl_WorkGroupID.x; g < total; g += gl_NumWorkGroups.x) {
        partial[lid] = dot_range(g, int(lid), WG);
        barrier();
        for (uint s = WG / 2; s > 0; s >>= 1) {
            if (lid < s)
                partial[lid] += partial[lid + s];
            barrier();
        }
        if (lid == 0)
            y[P[10] + int(g)] = partial[0];
        barrier();
    }
}
