#version 450
/*
 * DOT_GENERAL core: C[i, j, b] = sum_p A[i, p, b] * B[p, j, b], every
 * operand addressed by (offset, strides) so the host passes its views
 * straight through whenever their axes merge. C (binding 0) is dense
 * column-major [M, N, batch] from its offset. Parameters (P): M, N, K,
 * batch, A offset, A strides (m, k, batch), B offset, B strides (k, n,
 * batch), C offset.
 *
 * Tiling: a workgroup of 256 invocations (16 x 16) computes a BM x BN tile
 * of C, staging BK-deep slices of A and B in shared memory; each invocation
 * keeps a TM x TN block of C in registers (rows tx + 16r, columns ty + 16c),
 * so BM = 16 TM and BN = 16 TN. The build makes one module per tile shape
 * (-DTM, -DTN; vk_dot.c chooses by problem size): 64 x 64 (4 x 4, large
 * problems), 32 x 32 (2 x 2, medium), 64 x 16 (4 x 1, few columns) and
 * 16 x 64 (1 x 4, few rows). Edge tiles read zeros outside A and B and
 * store only inside C.
 * Variants: f32, f64 (fused multiply-add), i32, i64 (wrapping), c64 and
 * c128 (complex products of fused multiply-adds; pc.a2 bit 0 conjugates A,
 * bit 1 B, as each element is loaded).
 */
#define NOPS 1
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { S c[]; };
layout(std430, binding = 1) readonly buffer InA { S a[]; };
layout(std430, binding = 2) readonly buffer InB { S b[]; };

#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#define BM (16 * TM)
#define BN (16 * TN)
#define BK 16

#if defined(S_CPLX)
S ld_a(S v) { return (pc.a2 & 1u) != 0u ? S(v.x, -v.y) : v; }
S ld_b(S v) { return (pc.a2 & 2u) != 0u ? S(v.x, -v.y) : v; }
#define MAC(acc, u, w) \
    acc = S(fma(u.x, w.x, fma(-u.y, w.y, acc.x)), fma(u.x, w.y, fma(u.y, w.x, acc.y)))
#else
#define ld_a(v) (v)
#define ld_b(v) (v)
#if defined(S_INT)
#define MAC(acc, u, w) acc += (u) * (w) /* wraps */
#else
#define MAC(acc, u, w) acc = fma(u, w, acc)
#endif
#endif

shared S As[BK][BM];
shared S Bs[BK][BN];

void main()
{
    int M = P[0], N = P[1], K = P[2], NB = P[3];
    uint lid = gl_LocalInvocationID.x;
    int tx = int(lid % 16u), ty = int(lid / 16u);
    int i0 = int(gl_WorkGroupID.x) * BM, j0 = int(gl_WorkGroupID.y) * BN;
    for (int bt = int(gl_WorkGroupID.z); bt < NB; bt += int(gl_NumWorkGroups.z)) {
        int abase = P[4] + bt * P[7], bbase = P[8] + bt * P[11];
        S acc[TM][TN];
        for (int r = 0; r < TM; r++)
            for (int q = 0; q < TN; q++)
                acc[r][q] = S(0);
        for (int p0 = 0; p0 < K; p0 += BK) {
            /* Neighbouring invocations load neighbouring rows of A and neighbouring depths
               of B: contiguous for column-major operands. */
            for (int e = int(lid); e < BK * BM; e += WG) {
                int i = e % BM, p = e / BM;
                As[p][i] = (i0 + i < M && p0 + p < K)
                    ? ld_a(a[abase + (i0 + i) * P[5] + (p0 + p) * P[6]]) : S(0);
            }
            for (int e = int(lid); e < BK * BN; e += WG) {
                int pb = e % BK, j = e / BK;
                Bs[pb][j] = (j0 + j < N && p0 + pb < K)
                    ? ld_b(b[bbase + (p0 + pb) * P[9] + (j0 + j) * P[10]]) : S(0);
            }
            barrier();
            for (int p = 0; p < BK; p++) {
                S av[TM], bv[TN];
                for (int r = 0; r < TM; r++)
                    av[r] = As[p][tx + 16 * r];
                for (int q = 0; q < TN; q++)
                    bv[q] = Bs[p][ty + 16 * q];
                for (int r = 0; r < TM; r++)
                    for (int q = 0; q < TN; q++)
                        MAC(acc[r][q], av[r], bv[q]);
            }
            barrier();
        }
        for (int r = 0; r < TM; r++) {
            int i = i0 + tx + 16 * r;
            for (int q = 0; q < TN; q++) {
                int j = j0 + ty + 16 * q;
                if (i < M && j < N)
                    c[P[12] + i + j * M + bt * M * N] = acc[r][q];
            }
        }
    }
}
