#version 450
/*
 * FUSED: a straight-line program of float UNARY/BINARY steps over up to five
 * inputs (bindings 1..5), evaluated per element in registers. Output 0
 * (binding 0) and outputs 1..7 (bindings 6..12) each receive one step's
 * value. Each step calls the same function the UNARY/BINARY shaders call
 * (float_ops.glsl), so every value is rounded exactly as the separate
 * primitive rounds it. Float builds only (S_F32, S_F64); -DVEC4: the dense
 * form with vector accesses (vec4 / dvec4), whose last pc.n % 4 elements
 * run the scalar dense form.
 *
 * The program is not read at run time: it is compiled in. Specialisation
 * constants (vk_fused.c, fused_program, fills them):
 *   OP (id 0)  the form: inputs n (bits 0-2), steps (3-7), walk rank
 *              (8-11), dense (12), broadcast inputs (13-17: bit j, input j
 *              is one element, read once), outputs m (18-21), immediates
 *              (22-25, ABI 1.5);
 *   W0..W15    step k as kind | op << 1 | a << 8 | b << 16, where registers
 *              0..4 are the inputs, 5 + k is step k's value and 21 + j
 *              immediate j (the shader reads a and b; kind and op make the
 *              pipelines' keys differ);
 *   OUTS0/1    the register of each output, a byte each.
 * Each step slot K calls a stand-in, slotK (vslotK), which the engine
 * points at the op's function (fuN, fbN; vk_spirv.c) in a copy of this
 * module made for the program. Once the driver substitutes the constants,
 * every test below is constant and every register index too: what is left
 * is straight-line code over registers in SSA form, holding only the ops
 * the program uses, loading only its inputs and storing only its outputs.
 * So each distinct program is its own pipeline (see exec_fused for the
 * cache). Immediates are not compiled in: their values, rounded to the
 * dtype by the host, are words of the parameter block (P[IMMS + 2j], two
 * words each), read once per invocation like a broadcast input.
 *
 * Bit-for-bit equality with the separate primitives needs one more thing:
 * a separate UNARY/BINARY reads its operands from memory, so no compiler
 * can merge one step's work with another's (fusing a multiply and the next
 * step's add into one fma, re-associating across steps, sharing one value's
 * uses between two steps and folding x - x to 0). Here each operand of
 * each step passes through fence(): an OR with a word of the parameter
 * block that is always 0, a word of its own per operand (zero[]), which no
 * compiler can see through. It costs an integer OR per operand.
 *
 * Forms (chosen per call by vk_fused.c):
 *   strided  (dense 0): the offsets of the walked operands (common.glsl's
 *            layout) are computed per element over RANK axes;
 *   dense    (dense 1): every input is dense in the outputs' order
 *            (element offset + i) or a broadcast element;
 *   VEC4     dense with every non-broadcast operand at an element offset
 *            that is a multiple of 4: 4 elements per access.
 * Unused bindings hold input 0 or output 0 and are never touched. The
 * `precise` values of float_ops.glsl carry NoContraction decorations;
 * vk_spirv.c drops them with the functions it drops, so that the op
 * functions keep them here as in unary.comp and binary.comp.
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
#if defined(VEC4) /* the same bindings, seen as vectors */
#if defined(S_F64)
#define V4 dvec4
#endif
layout(std430, binding = 0) writeonly buffer Out0v { V4 v_o0[]; };
layout(std430, binding = 1) readonly buffer In0v { V4 v_x0[]; };
layout(std430, binding = 2) readonly buffer In1v { V4 v_x1[]; };
layout(std430, binding = 3) readonly buffer In2v { V4 v_x2[]; };
layout(std430, binding = 4) readonly buffer In3v { V4 v_x3[]; };
layout(std430, binding = 5) readonly buffer In4v { V4 v_x4[]; };
layout(std430, binding = 6) writeonly buffer Out1v { V4 v_o1[]; };
layout(std430, binding = 7) writeonly buffer Out2v { V4 v_o2[]; };
layout(std430, binding = 8) writeonly buffer Out3v { V4 v_o3[]; };
layout(std430, binding = 9) writeonly buffer Out4v { V4 v_o4[]; };
layout(std430, binding = 10) writeonly buffer Out5v { V4 v_o5[]; };
layout(std430, binding = 11) writeonly buffer Out6v { V4 v_o6[]; };
layout(std430, binding = 12) writeonly buffer Out7v { V4 v_o7[]; };
#endif

#include "float_ops.glsl"

layout(constant_id = 1) const uint W0 = 0u;
layout(constant_id = 2) const uint W1 = 0u;
layout(constant_id = 3) const uint W2 = 0u;
layout(constant_id = 4) const uint W3 = 0u;
layout(constant_id = 5) const uint W4 = 0u;
layout(constant_id = 6) const uint W5 = 0u;
layout(constant_id = 7) const uint W6 = 0u;
layout(constant_id = 8) const uint W7 = 0u;
layout(constant_id = 9) const uint W8 = 0u;
layout(constant_id = 10) const uint W9 = 0u;
layout(constant_id = 11) const uint W10 = 0u;
layout(constant_id = 12) const uint W11 = 0u;
layout(constant_id = 13) const uint W12 = 0u;
layout(constant_id = 14) const uint W13 = 0u;
layout(constant_id = 15) const uint W14 = 0u;
layout(constant_id = 16) const uint W15 = 0u;
layout(constant_id = 17) const uint OUTS0 = 0u; /* register of outputs 0 .. 3, a byte each */
layout(constant_id = 18) const uint OUTS1 = 0u; /* of outputs 4 .. 7 */

#define NIN (OP & 7u)
#define NSTEPS ((OP >> 3u) & 31u)
#define RANK ((OP >> 8u) & 15u)
#define DENSE (((OP >> 12u) & 1u) != 0u)
#define BCAST(j) (((OP >> (13u + (j))) & 1u) != 0u)
#define NOUT ((OP >> 18u) & 15u)
#define NIMM ((OP >> 22u) & 15u)
#define OUTREG(k) ((((k) < 4u ? OUTS0 : OUTS1) >> (8u * ((k) & 3u))) & 255u)
/* Walk operand j is walked: output 0, the inputs (1 .. n) but broadcast ones, outputs
   1 .. m - 1 (6 ..). */
#define USED(j) \
    ((j) == 0u || ((j) <= NIN && !BCAST((j) - 1u)) || ((j) >= 6u && (j) < 5u + NOUT))

#define MAX_STEPS 16 /* TF_FUSED_MAX_STEPS */
#define MAX_IMM 8    /* TF_FUSED_MAX_IMMEDIATES */
#define ZEROS 126    /* P[ZEROS ..]: 2 * MAX_STEPS words that are 0, after the walk */
#define IMMS 158     /* P[IMMS + 2j ..]: immediate j, after the zeros */
#define IMM_REG 21   /* the register of immediate 0 (5 + MAX_STEPS) */

int base[NOPS];           /* the operands' element offsets */
uint zero[2 * MAX_STEPS]; /* the fences' words: operand a of step k uses zero[2k], b 2k + 1 */
S b0, b1, b2, b3, b4;     /* broadcast inputs, read once */
S imm[MAX_IMM];           /* the immediates, read once */

/*
 * The op functions: fuN is unary op N, fbN binary op N (vfuN, vfbN on four
 * elements), all of one signature (a, b), so that the host can point the
 * call of a step slot (slotK, vslotK: stand-ins) at the step's op
 * (vk_spirv.c). every_op calls each one once, so that glslc keeps them; the
 * host points its call at slot0, and then drops it with the op functions the
 * program does not call.
 */
#define SCALAR_UNARY(n, f) \
    S fu##n(S a, S b) { return f(a); }
#define SCALAR_BINARY(n, f) \
    S fb##n(S a, S b) { return f(a, b); }
#define SCALAR_SLOT(k) \
    S slot##k(S a, S b) { return a; }
#define CALL_UNARY(n, f) +fu##n(a, b)
#define CALL_BINARY(n, f) +fb##n(a, b)
#define SLOTS(X) \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
FLOAT_UNARY_OPS(SCALAR_UNARY)
FLOAT_BINARY_OPS(SCALAR_BINARY)
SLOTS(SCALAR_SLOT)
S every_op(S a, S b) { return S(0) FLOAT_UNARY_OPS(CALL_UNARY) FLOAT_BINARY_OPS(CALL_BINARY); }

/* v, through an OR with z, a word that is always 0 (see above). */
S fence(S v, uint z)
{
#if defined(S_F32)
    return uintBitsToFloat(floatBitsToUint(v) | z);
#else
    return packDouble2x32(unpackDouble2x32(v) | uvec2(z));
#endif
}

#if defined(VEC4)
#define VECTOR_UNARY(n, f) \
    V4 vfu##n(V4 a, V4 b) { return V4(f(a.x), f(a.y), f(a.z), f(a.w)); }
#define VECTOR_BINARY(n, f) \
    V4 vfb##n(V4 a, V4 b) { return V4(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w)); }
#define VECTOR_SLOT(k) \
    V4 vslot##k(V4 a, V4 b) { return a; }
#define CALL_VUNARY(n, f) +vfu##n(a, b)
#define CALL_VBINARY(n, f) +vfb##n(a, b)
FLOAT_UNARY_OPS(VECTOR_UNARY)
FLOAT_BINARY_OPS(VECTOR_BINARY)
SLOTS(VECTOR_SLOT)
V4 every_vop(V4 a, V4 b)
{
    return V4(0) FLOAT_UNARY_OPS(CALL_VUNARY) FLOAT_BINARY_OPS(CALL_VBINARY);
}

V4 fence(V4 v, uint z) { return V4(fence(v.x, z), fence(v.y, z), fence(v.z, z), fence(v.w, z)); }
#endif

/* Step K: reg[5 + K] = its op on reg[a], reg[b] (constant indices once specialised), each
   operand through a fence of its own. */
#define STEP(K) \
    if (uint(K) < NSTEPS) \
        reg[5 + K] = CALL(K, fence(reg[(W##K >> 8u) & 255u], zero[2 * K]), \
                          fence(reg[W##K >> 16u], zero[2 * K + 1]));

/* Input j into its register; immediate j into its; output k from its register (for those
   the program has). */
#define LOAD_INPUT(j, n) \
    if (uint(j) < NIN) \
        reg[j] = LOAD(j, n);
#define LOAD_IMM(j) \
    if (uint(j) < NIMM) \
        reg[IMM_REG + j] = R(imm[j]);
#define STORE_OUTPUT(k, n) \
    if (uint(k) < NOUT) \
        STORE(k, n, reg[OUTREG(uint(k))]);

/* The body of one element (or one vector) of the program: fused_prog.glsl, with R the
   register type, CALL(K, a, b) step slot K, LOAD(j, n) input j (walk operand n) and
   STORE(k, n, v) output k. */
#define R S
#define CALL(K, a, b) slot##K(a, b)
#define LOAD(j, n) (BCAST(uint(j)) ? b##j : x##j[off[n]])
#define STORE(k, n, v) o##k[off[n]] = v
void run(uint i)
{
    int off[NOPS];
    if (DENSE) {
        for (uint j = 0u; j < NOPS; j++)
            off[j] = base[j] + int(i);
    } else {
        /* The walk of the operands in use over RANK axes (common.glsl's walk). */
        for (uint j = 0u; j < NOPS; j++)
            off[j] = base[j];
        uint r = i;
        for (uint k = 0u; k < RANK; k++) {
            uint e = uint(P[1 + k]);
            int idx = k + 1u == RANK ? int(r) : int(r % e);
            r /= e;
            for (uint j = 0u; j < NOPS; j++) {
                if (USED(j))
                    off[j] += idx * P[10 + 9 * j + k];
            }
        }
    }
#include "fused_prog.glsl"
}
#undef R
#undef CALL
#undef LOAD
#undef STORE

#if defined(VEC4)
#define R V4
#define CALL(K, a, b) vslot##K(a, b)
#define LOAD(j, n) (BCAST(uint(j)) ? V4(b##j) : v_x##j[(base[n] >> 2) + int(q)])
#define STORE(k, n, v) v_o##k[(base[n] >> 2) + int(q)] = v
void run4(uint q)
{
#include "fused_prog.glsl"
}
#endif

void main()
{
    if (OP == 0u) { /* never (a program has inputs): keeps the op functions */
        o0[0] = every_op(x0[0], x1[0]);
#if defined(VEC4)
        v_o0[0] = every_vop(v_x0[0], v_x1[0]);
#endif
    }
    for (int j = 0; j < NOPS; j++)
        base[j] = P[9 + 9 * j];
    for (int k = 0; k < 2 * MAX_STEPS; k++)
        zero[k] = uint(P[ZEROS + k]);
    b0 = b1 = b2 = b3 = b4 = S(0);
    for (uint j = 0u; j < MAX_IMM; j++) {
        imm[j] = S(0);
        if (j < NIMM) {
#if defined(S_F32)
            imm[j] = uintBitsToFloat(uint(P[IMMS + 2 * j]));
#else
            imm[j] = packDouble2x32(uvec2(uint(P[IMMS + 2 * j]), uint(P[IMMS + 2 * j + 1])));
#endif
        }
    }
    if (BCAST(0u))
        b0 = x0[base[1]];
    if (NIN > 1u && BCAST(1u))
        b1 = x1[base[2]];
    if (NIN > 2u && BCAST(2u))
        b2 = x2[base[3]];
    if (NIN > 3u && BCAST(3u))
        b3 = x3[base[4]];
    if (NIN > 4u && BCAST(4u))
        b4 = x4[base[5]];
#if defined(VEC4)
    VEC4_FOR_EACH(q) run4(q);
    VEC4_TAIL(t) run(t);
#else
    FOR_EACH_ELEMENT(i) run(i);
#endif
}
