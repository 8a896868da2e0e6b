#version 450
/*
 * FUSED: a straight-line program of float UNARY/BINARY steps over up to five
 * inputs (bindings 1..5), evaluated per element in registers: r[0 .. n-1]
 * are the inputs' elements, step k writes r[n + k]. Output 0 (binding 0) and
 * outputs 1..7 (bindings 6..12) each receive one register. Each step calls
 * the same function the UNARY/BINARY shaders call (float_ops.glsl), so every
 * register is rounded exactly as the separate primitive rounds it. Float
 * builds only (S_F32, S_F64).
 *
 * Walk operand j is binding j (one output: only the first six are walked).
 * The program arrives in the parameter block
 * after the walk of the NOPS operands (see vk_prims.c, exec_fused):
 * P[PROG] = n, P[PROG + 1] = steps, P[PROG + 2] = outputs m, P[PROG + 3 + i]
 * = the register of output i, P[PROG + 11 + k] = step k as
 * kind | op << 1 | a << 8 | b << 16. It is read at run time, not
 * specialised: every invocation follows the same path through the switch,
 * and one pipeline serves every program of one output. The specialisation
 * constant OP is 1 for programs of several outputs: their stores are
 * compiled only into that second pipeline, since merely having them in the
 * one-output shader cost lavapipe about 40% more time per element.
 * Unused bindings hold input 0 or output 0 and are never touched.
 */
#define NOPS 13
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Out0 { S o0[]; };
layout(std430, binding = 1) readonly buffer In0 { S x0[]; };
layout(std430, binding = 2) readonly buffer In1 { S x1[]; };
layout(std430, binding = 3) readonly buffer In2 { S x2[]; };
layout(std430, binding = 4) readonly buffer In3 { S x3[]; };
layout(std430, binding = 5) readonly buffer In4 { S x4[]; };
layout(std430, binding = 6) writeonly buffer Out1 { S o1[]; };
layout(std430, binding = 7) writeonly buffer Out2 { S o2[]; };
layout(std430, binding = 8) writeonly buffer Out3 { S o3[]; };
layout(std430, binding = 9) writeonly buffer Out4 { S o4[]; };
layout(std430, binding = 10) writeonly buffer Out5 { S o5[]; };
layout(std430, binding = 11) writeonly buffer Out6 { S o6[]; };
layout(std430, binding = 12) writeonly buffer Out7 { S o7[]; };

#include "float_ops.glsl"

#define MAX_INPUTS 5  /* TF_FUSED_MAX_INPUTS */
#define MAX_STEPS 16  /* TF_FUSED_MAX_STEPS */
#define MAX_OUTPUTS 8 /* TF_FUSED_MAX_OUTPUTS */
#define PROG 126      /* first word after the walk of NOPS operands */
#define OUTS (PROG + 3)
#define STEPS (PROG + 3 + MAX_OUTPUTS)
#define SEVERAL (OP != 0u) /* outputs 1 .. m-1 exist (m = P[PROG + 2]) */

void main()
{
    int n_in = P[PROG], n_steps = P[PROG + 1], n_out = P[PROG + 2];
    FOR_EACH_ELEMENT(i) {
        int off[NOPS];
        walk_first(i, SEVERAL ? NOPS : 1 + MAX_INPUTS, off);
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
            uint w = uint(P[STEPS + k]);
            uint op = (w >> 1) & 127u;
            S a = r[(w >> 8) & 255u];
            if ((w & 1u) == 0u)
                r[n_in + k] = unary_float(op, a);
            else
                r[n_in + k] = binary_float(op, a, r[(w >> 16) & 255u]);
        }
        o0[off[0]] = r[P[OUTS]];
        if (SEVERAL) {
            o1[off[6]] = r[P[OUTS + 1]];
            if (n_out > 2)
                o2[off[7]] = r[P[OUTS + 2]];
            if (n_out > 3)
                o3[off[8]] = r[P[OUTS + 3]];
            if (n_out > 4)
                o4[off[9]] = r[P[OUTS + 4]];
            if (n_out > 5)
                o5[off[10]] = r[P[OUTS + 5]];
            if (n_out > 6)
                o6[off[11]] = r[P[OUTS + 6]];
            if (n_out > 7)
                o7[off[12]] = r[P[OUTS + 7]];
        }
    }
}
