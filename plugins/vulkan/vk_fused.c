/*
 * vk_fused.c - TF_PRIM_FUSED on the Vulkan engine: a chain of float
 * UNARY/BINARY steps over up to five inputs, with up to eight outputs, as
 * one dispatch of shaders/fused.comp compiled for the program.
 *
 * The program's steps call the very functions unary.comp and binary.comp run
 * (shaders/float_ops.glsl), so each output is its step's result bit for bit.
 * This file turns a call into the program's specialisation constants and its
 * dispatch; vk_spirv.c makes the program's shader module.
 */
#include <string.h>

#include "vk_internal.h"

/*
 * FUSED: one dispatch of fused.comp over the walk of the outputs and the
 * inputs (broadcast inputs have stride 0 and merge like any other operand).
 * Walk operand j is binding j: out[0], five input slots, out[1 .. 7]. The
 * shader names all thirteen bindings, so each must hold a valid buffer:
 * unused input slots hold input 0 and unused output slots out[0], never
 * touched.
 *
 * The program is compiled into the pipeline: specialisation constants (laid
 * out in shaders/fused.comp) give its shape and the registers each step
 * reads, and vk_spirv.c points each step's call at its op's function in a
 * module made for the program. The driver then emits straight-line code with
 * the registers in SSA form and only the ops, loads and stores the program
 * has, where an interpreter (a switch over every op per step, registers in
 * an indexed array) ran up to 9 times slower than the steps as separate
 * dispatches on lavapipe. The price is a pipeline per distinct program and
 * form: compiled on first use, kept in the engine's pipeline list with the
 * others (at most max_programs of them, the least recently used going
 * first) and in the VkPipelineCache. A training loop repeats a few programs.
 *
 * The form is part of the program: dense when, after merging, the walk has
 * at most one axis and every input runs along it with stride 1 or is one
 * broadcast element (a scalar; so the shader indexes offset + i, no walk),
 * with vector accesses when the non-broadcast operands start at element
 * offsets that are multiples of 4 and there are at least 4 elements;
 * otherwise strided, compiled for the walk's rank. Inputs whose strides
 * are all 0 are read once in every form. The parameter block holds the walk,
 * then 2 zero words per step (the fences of fused.comp), then 2 words per
 * immediate (ABI 1.5): its value rounded to the dtype, as float bits in the
 * first word (f32) or as the two words of a double (f64). Immediates are
 * data, not part of the pipeline: a new learning rate compiles nothing.
 */
#define FUSED_FIRST_OUT (1 + TF_FUSED_MAX_INPUTS) /* walk operand of out[1] */
/* The walk, then 2 words per step that are 0 (fused.comp's fences), then 2 per immediate. */
#define FUSED_IMMS (VK_LAYOUT_WORDS + 2 * TF_FUSED_MAX_STEPS)
#define FUSED_PARAMS (FUSED_IMMS + 2 * TF_FUSED_MAX_IMMEDIATES)
/* fused.comp's register of immediate j: after the inputs' and the steps' */
#define FUSED_IMM_REG (TF_FUSED_MAX_INPUTS + TF_FUSED_MAX_STEPS)
_Static_assert(VK_MAX_BINDINGS == 13 && VK_LAYOUT_WORDS == 126, "fused.comp's NOPS and ZEROS");

/* Walk operand j (of the first nwalk, from layout p) never moves: stride 0 on every axis. */
static int still(const int32_t *p, uint32_t j)
{
    for (int32_t k = 0; k < p[0]; k++) {
        if (p[10 + 9 * j + k] != 0)
            return 0;
    }
    return 1;
}

/* The immediates a call's params carry (ABI 1.5). */
static uint32_t fused_n_imm(const tf_fused_params *pr)
{
    return TF_ABI_HAS_FIELD(pr, tf_fused_params, imm) ? pr->n_imm : 0;
}

/* A step operand as fused.comp's register: inputs 0 .. 4, step k 5 + k, immediate j 21 + j. */
static uint32_t fused_reg(uint32_t r, uint32_t n_in)
{
    if (r & TF_FUSED_IMM)
        return FUSED_IMM_REG + (r & ~TF_FUSED_IMM);
    return r < n_in ? r : r - n_in + TF_FUSED_MAX_INPUTS;
}

/*
 * The specialisation constants of a call (fused.comp): *op the form word,
 * prog[0 .. 15] the steps with registers renumbered (inputs 0 .. 4, step k
 * 5 + k, immediate j 21 + j), prog[16 .. 17] the register of each output (a
 * byte each); and whether the vector form applies.
 */
static int fused_program(const tf_fused_params *pr, uint32_t n_in, uint32_t m, const int32_t *p,
                         uint64_t n, uint32_t *op, uint32_t prog[VK_SPEC_WORDS - 1])
{
    /* Outputs are dense (the core checks): stride 1 in a walk of one axis. */
    uint32_t bcast = 0, dense = p[0] == 0 || (p[0] == 1 && p[10] == 1);
    uint32_t aligned = n >= 4 && p[9] % 4 == 0;
    for (uint32_t j = 0; j < n_in; j++) {
        if (still(p, 1 + j))
            bcast |= 1u << j;
        else
            dense = dense && p[10 + 9 * (1 + j)] == 1;
        if (!(bcast >> j & 1u) && p[9 + 9 * (1 + j)] % 4 != 0)
            aligned = 0;
    }
    for (uint32_t j = FUSED_FIRST_OUT; j < FUSED_FIRST_OUT + m - 1; j++) {
        dense = dense && (p[0] == 0 || p[10 + 9 * j] == 1);
        if (p[9 + 9 * j] % 4 != 0)
            aligned = 0;
    }
    uint32_t rank = dense ? 0 : (uint32_t)p[0];
    *op = n_in | pr->n_steps << 3 | rank << 8 | dense << 12 | bcast << 13 | m << 18 |
          fused_n_imm(pr) << 22;
    memset(prog, 0, (VK_SPEC_WORDS - 1) * sizeof *prog);
    for (uint32_t k = 0; k < pr->n_steps; k++) {
        const tf_fused_step *s = &pr->steps[k];
        uint32_t a = fused_reg(s->a, n_in);
        uint32_t b = s->kind == TF_FUSED_BINARY ? fused_reg(s->b, n_in) : 0;
        prog[k] = s->kind | s->op << 1 | a << 8 | b << 16;
    }
    for (uint32_t i = 0; i < m; i++) {
        uint32_t k = m > 1 ? pr->outputs[i] : pr->n_steps - 1;
        prog[TF_FUSED_MAX_STEPS + i / 4] |= (TF_FUSED_MAX_INPUTS + k) << (8 * (i % 4));
    }
    return dense && aligned;
}

tf_status tf__vk_exec_fused(vk_engine *e, const tf_exec *x)
{
    const tf_fused_params *pr = x->params;
    uint32_t n_in = x->n_inputs, m = tf__vk_fused_outputs(pr);
    const tf_operand *ops[VK_MAX_BINDINGS];
    ops[0] = x->outputs[0];
    for (uint32_t j = 0; j < TF_FUSED_MAX_INPUTS; j++)
        ops[1 + j] = x->inputs[j < n_in ? j : 0];
    for (uint32_t i = 1; i < TF_FUSED_MAX_OUTPUTS; i++)
        ops[TF_FUSED_MAX_INPUTS + i] = x->outputs[i < m ? i : 0];
    uint32_t nwalk = m > 1 ? TF_FUSED_MAX_INPUTS + m : 1 + n_in; /* the slots in use */
    int32_t p[FUSED_PARAMS];
    uint64_t n;
    if (!tf__vk_layout(ops, nwalk, nwalk, 0, p, &n))
        return tf__vk_too_large(e, x->prim);
    if (n == 0)
        return TF_OK;
    memset(p + VK_LAYOUT_WORDS, 0,
           (FUSED_PARAMS - VK_LAYOUT_WORDS) * sizeof *p); /* fused.comp's zeros */
    uint32_t op, prog[VK_SPEC_WORDS - 1];
    int vec4 = fused_program(pr, n_in, m, p, n, &op, prog);
    int f64 = ops[0]->dtype == TF_F64;
    for (uint32_t j = 0; j < fused_n_imm(pr); j++) { /* rounded as FILL rounds value.f */
        if (f64) {
            memcpy(&p[FUSED_IMMS + 2 * j], &pr->imm[j], sizeof(double));
        } else {
            float v = (float)pr->imm[j];
            memcpy(&p[FUSED_IMMS + 2 * j], &v, sizeof v);
        }
    }
    vk_dispatch d = {.shader = vec4 ? (f64 ? VK_SHADER_FUSED_F64_V4 : VK_SHADER_FUSED_F32_V4)
                                    : (f64 ? VK_SHADER_FUSED_F64 : VK_SHADER_FUSED_F32),
                     .spec = op,
                     .program = prog,
                     .n_bind = VK_MAX_BINDINGS,
                     .params = p,
                     .n_params = FUSED_PARAMS,
                     .push = {(uint32_t)n, 0, 0, 0},
                     .groups = {tf__vk_groups(vec4 ? (n + 3) / 4 : n), 1, 1}};
    for (uint32_t j = 0; j < VK_MAX_BINDINGS; j++) {
        d.bind[j] = ops[j]->buffer;
        d.writes[j] = j == 0 || j > TF_FUSED_MAX_INPUTS;
    }
    return tf__vk_record_dispatch(e, &d);
}
