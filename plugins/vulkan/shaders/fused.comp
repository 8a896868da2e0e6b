#version 450
/*
 * FUSED: out (0) = a straight-line program of float UNARY/BINARY steps over
 * up to five inputs (bindings 1..5), evaluated per element in registers:
 * r[0 .. n-1] are the inputs' elements, step k writes r[n + k], out is the
 * last register. Each step calls the same function the UNARY/BINARY shaders
 * call (float_ops.glsl), so every register is rounded exactly as the
 * separate primitive rounds it. Float builds only (S_F32, S_F64).
 *
 * The program arrives in the parameter block after the walk of six operands
 * (see vk_prims.c, exec_fused): P[63] = n, P[64] = steps, P[65 + k] = step k
 * as kind | op << 1 | a << 8 | b << 16. It is read at run time, not
 * specialised: every invocation follows the same path through the switch,
 * and one pipeline serves every program. Unused input bindings are bound to
 * input 0 and never read.
 */
#define NOPS 6
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out { S o[]; };
layout(std430, binding = 1) readonly buffer In0 { S x0[]; };
layout(std430, binding = 2) readonly buffer In1 { S x1[]; };
layout(std430, binding = 3) readonly buffer In2 { S x2[]; };
layout(std430, binding = 4) readonly buffer In3 { S x3[]; };
layout(std430, binding = 5) readonly buffer In4 { S x4[]; };

#include "float_ops.glsl"

#define MAX_INPUTS 5 /* TF_FUSED_MAX_INPUTS */
#define MAX_STEPS 16 /* TF_FUSED_MAX_STEPS */
#define PROG 63      /* first word after the walk of NOPS operands */

void main()
{
    int n_in = P[PROG], n_steps = P[PROG + 1];
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk(i, off);
        S r[MAX_INPUTS + MAX_STEPS];
        r[0] = x0[off[1]];
        if (n_in > 1)
            r[1] = x1[off[2]];
        if (n_in > 2)
            r[2] = x2[off[3]];
        if (n_in > 3)
            r[3] = x3[off[4]];
        if (n_in > 4)
            r[4] = x4[off[5]];
        for (int k = 0; k < n_steps; k++) {
            uint w = uint(P[PROG + 2 + k]);
            uint op = (w >> 1) & 127u;
            S a = r[(w >> 8) & 255u];
            if ((w & 1u) == 0u)
                r[n_in + k] = unary_float(op, a);
            else
                r[n_in + k] = binary_float(op, a, r[(w >> 16) & 255u]);
        }
        o[off[0]] = r[n_in + n_steps - 1];
    }
}
