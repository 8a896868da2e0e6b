#version 450
/*
 * DOT_GENERAL core for large f32 and f64 products, C[i, j, b] = sum_p
 * A[i, p, b] * B[p, j, b], when A is contiguous along M and B along K (as
 * column-major dense operands are): the module reads A's m stride (P[5]) and
 * B's k stride (P[9]) as 1 and never looks at them; vk_dot.c (gemm_choose)
 * takes it only then, and gemm.comp serves every other layout. Otherwise
 * the interface of gemm.comp: bindings 0 .. 2, the same parameters P, the
 * batch looped over gl_WorkGroupID.z, C dense column-major [M, N, batch].
 *
 * Tiling: a workgroup of 256 invocations computes a 128 x 128 tile of C in
 * slices of BK = 8 depths. Invocation (tx, ty), each in 0 .. 15, keeps an
 * 8 x 8 block of C in registers (64 accumulators): rows 4 tx + {0..3} and
 * 64 + 4 tx + {0..3}, columns 4 ty + {0..3} and 64 + 4 ty + {0..3}. Each 32
 * consecutive invocations (a warp on NVIDIA) take 8 tx by 4 ty, 2 by 4 such
 * groups, so each shared load of a warp reads 8 (A) or 4 (B) distinct vectors
 * rather than 16 or 2.
 *
 * Shared memory holds As[k][m] and Bs[k][n] as vectors of 4 (vec4, dvec4),
 * so each step p reads an invocation's 8 A and 8 B values in four vector
 * loads: A at vectors tx and 16 + tx (8 neighbouring invocations read 8
 * adjacent vectors: no bank conflict), B at ty and 16 + ty (the same vector
 * for 8 neighbours: a broadcast). B arrives along k, so it is stored
 * transposed: 8 depths of 4 columns per warp, which would fall on 4 of the
 * 32 banks (8-way conflicts) in plain rows. Instead of padding the rows,
 * the vector index within row k is XORed with k, which spreads them over
 * all 32 banks for f32 (f64 keeps 2-way conflicts on these stores) and
 * keeps rows of 32 vectors; the reads undo it with the same XOR. Two
 * buffers of each: 2 x 2 x 8 x 128 elements, 16 KiB (f32) or 32 KiB (f64).
 *
 * Loads, per slice and invocation: 4 elements of A (row lid % 128, depths
 * lid / 128 + 2r) and 4 of B (depth lid % 8, columns lid / 8 + 32r), so a
 * warp's load reads 32 adjacent elements of one column of A, or the 8
 * adjacent depths of 4 columns of B. Pipeline: the next slice is loaded
 * from global memory into registers (ra, rb) while the current one is
 * computed from one shared buffer, and stored into the other at the start
 * of the next slice, before its only barrier. Edges: zeros outside A and B (a slice past
 * K reads nothing), stores only inside C.
 * Variants: f32, f64 (fused multiply-add).
 */
#extension GL_EXT_control_flow_attributes : require
#define NOPS 1
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { S c[]; };
layout(std430, binding = 1) readonly buffer InA { S a[]; };
layout(std430, binding = 2) readonly buffer InB { S b[]; };

#if defined(S_F64)
#define SV dvec4
#else
#define SV vec4
#endif
#define BM 128
#define BN 128
#define BK 8

shared SV As[2][BK][BM / 4];
shared SV Bs[2][BK][BN / 4];

/* The problem and this invocation's place in it, set once by main. */
int M, N, K, lda, ldb, j0;
int am, ak; /* the A row (in the tile) and first depth it loads */
int bk, bn; /* the B depth and first column (in the tile) it loads */
bool arow;  /* row am lies inside A */
S ra[4], rb[4]; /* the next slice on its way from global to shared memory */

/* Loads the slice at depth p0 into ra, rb: abase addresses A[row am, depth 0] and bbase
   B[depth bk, column 0] of the batch. */
void load_slice(int p0, int abase, int bbase)
{
    [[unroll]] for (int r = 0; r < 4; r++) {
        int p = p0 + ak + 2 * r, j = j0 + bn + 32 * r;
        ra[r] = S(0);
        if (arow && p < K)
            ra[r] = a[abase + p * lda];
        rb[r] = S(0);
        if (p0 + bk < K && j < N)
            rb[r] = b[bbase + p0 + j * ldb];
    }
}

void store_slice(int buf)
{
    [[unroll]] for (int r = 0; r < 4; r++) {
        As[buf][ak + 2 * r][am >> 2][am & 3] = ra[r];
        int n = bn + 32 * r;
        Bs[buf][bk][(n >> 2) ^ bk][n & 3] = rb[r];
    }
}

void main()
{
    M = P[0];
    N = P[1];
    K = P[2];
    lda = P[6];
    ldb = P[10];
    int NB = P[3];
    int lid = int(gl_LocalInvocationID.x);
    int tx = (lid & 7) | ((lid >> 2) & 8), ty = ((lid >> 3) & 3) | ((lid >> 4) & 12);
    int i0 = int(gl_WorkGroupID.x) * BM;
    j0 = int(gl_WorkGroupID.y) * BN;
    am = lid % BM;
    ak = lid / BM;
    bk = lid % BK;
    bn = lid / BK;
    arow = i0 + am < M;
    int slices = (K + BK - 1) / BK;
    for (int bt = int(gl_WorkGroupID.z); bt < NB; bt += int(gl_NumWorkGroups.z)) {
        int abase = P[4] + bt * P[7] + i0 + am, bbase = P[8] + bt * P[11] + bk;
        S acc[8][8];
        [[unroll]] for (int r = 0; r < 8; r++)
            [[unroll]] for (int q = 0; q < 8; q++)
                acc[r][q] = S(0);
        load_slice(0, abase, bbase);
        for (int s = 0; s < slices; s++) {
            int cur = s & 1;
            /* Buffer cur was last read two slices ago, before the previous barrier. */
            store_slice(cur);
            barrier();
            load_slice((s + 1) * BK, abase, bbase);
            [[unroll]] for (int p = 0; p < BK; p++) {
                SV a0 = As[cur][p][tx], a1 = As[cur][p][16 + tx];
                SV b0 = Bs[cur][p][ty ^ p], b1 = Bs[cur][p][(16 + ty) ^ p];
                S av[8] = S[8](a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
                S bv[8] = S[8](b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w);
                [[unroll]] for (int r = 0; r < 8; r++)
                    [[unroll]] for (int q = 0; q < 8; q++)
                        acc[r][q] = fma(av[r], bv[q], acc[r][q]);
            }
        }
        barrier(); /* the next batch stores into the buffer last read */
        int cbase = P[12] + bt * M * N;
        [[unroll]] for (int q = 0; q < 8; q++) {
            int j = j0 + (q >> 2) * 64 + 4 * ty + (q & 3);
            [[unroll]] for (int r = 0; r < 8; r++) {
                int i = i0 + (r >> 2) * 64 + 4 * tx + (r & 3);
                if (i < M && j < N)
                    c[cbase + i + j * M] = acc[r][q];
            }
        }
    }
}
