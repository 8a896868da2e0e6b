/*
 * vk_spirv.c - the shader module of one FUSED program: fused.comp's SPIR-V
 * with the call of each step slot pointed at the function of the step's op.
 *
 * Why: fused.comp holds a function per float op (fuN, fbN; vfuN, vfbN on
 * four elements) and sixteen step slots, each calling a stand-in
 * (slotK, vslotK) on the registers the specialisation constants name. Had
 * each slot chosen its op by a switch on a specialisation constant, every
 * slot would hold every op until the driver folds the constants, and drivers
 * inline and lower all of it first: on lavapipe one f64 program of four
 * steps took 1 s to compile in the scalar form and 18 s in the vector one.
 * With the calls pointed here, the driver only ever sees the ops the
 * program runs (5 to 30 ms). every_op and every_vop, which call each op
 * function once so that glslc keeps them, are pointed at a stand-in too.
 *
 * The functions are found by their OpName (glslang's "slot3(f1;f1;"): the
 * fused modules are built without stripping names (plugins/vulkan/
 * CMakeLists.txt). A module that lacks one is an internal error, reported.
 *
 * The decorations of what a dropped function defines go with it (a
 * decoration must target an id the module defines): float_ops.glsl's
 * `precise` values carry NoContraction.
 */
#include <string.h>

#include "vk_internal.h"

#define SPV_OP_NAME 5
#define SPV_OP_MEMBER_NAME 6
#define SPV_OP_ENTRY_POINT 15
#define SPV_OP_FUNCTION 54
#define SPV_OP_FUNCTION_END 56
#define SPV_OP_FUNCTION_CALL 57
#define SPV_OP_DECORATE 71
#define SPV_OP_MEMBER_DECORATE 72
#define SPV_OP_LABEL 248
#define SPV_OP_DECORATE_ID 332
#define SPV_OP_DECORATE_STRING 5632
#define SPV_OP_MEMBER_DECORATE_STRING 5633
#define SPV_HEADER_WORDS 5
#define SPV_BOUND_WORD 3 /* of the header: every id is below it */

/* The ids a program's calls are pointed with; 0 where the module has none. */
typedef struct fused_ids {
    uint32_t slot[2][TF_FUSED_MAX_STEPS]; /* [vector][k]: slotK, vslotK */
    uint32_t op[2][2][32];                /* [vector][binary][op]: fuN, fbN, vfuN, vfbN */
    uint32_t every[2];                    /* every_op, every_vop */
} fused_ids;

/* Byte i of a SPIR-V literal string starting at word w (four bytes a word, low byte first). */
static char name_byte(const uint32_t *w, uint32_t i)
{
    return (char)(w[i / 4] >> (8 * (i % 4)) & 0xffu);
}

/* Whether the name (`n` words at w) is prefix, decimal digits and '(' ; *num the number. */
static int name_is(const uint32_t *w, uint32_t n, const char *prefix, uint32_t *num)
{
    uint32_t len = (uint32_t)strlen(prefix), i = 0;
    for (; i < len; i++) {
        if (i >= 4 * n || name_byte(w, i) != prefix[i])
            return 0;
    }
    if (num == NULL)
        return i < 4 * n && name_byte(w, i) == '(';
    uint32_t v = 0, digits = 0;
    for (; i < 4 * n && name_byte(w, i) >= '0' && name_byte(w, i) <= '9' && digits < 3; i++) {
        v = v * 10 + (uint32_t)(name_byte(w, i) - '0');
        digits++;
    }
    *num = v;
    return digits > 0 && i < 4 * n && name_byte(w, i) == '(';
}

static void note_name(fused_ids *ids, uint32_t id, const uint32_t *w, uint32_t n)
{
    static const char *const ops[2][2] = {{"fu", "fb"}, {"vfu", "vfb"}};
    uint32_t k;
    for (int v = 0; v < 2; v++) {
        if (name_is(w, n, v ? "vslot" : "slot", &k) && k < TF_FUSED_MAX_STEPS)
            ids->slot[v][k] = id;
        if (name_is(w, n, v ? "every_vop" : "every_op", NULL))
            ids->every[v] = id;
        for (int b = 0; b < 2; b++) {
            if (name_is(w, n, ops[v][b], &k) && k < 32)
                ids->op[v][b][k] = id;
        }
    }
}

/* The functions of a module: ids, first word (OpFunction) and one past OpFunctionEnd. */
typedef struct fn_table {
    uint32_t n, entry, bound; /* entry: the entry point's function id; bound: the header's */
    uint32_t *id, *start, *end;
    uint8_t *keep; /* reachable from the entry point */
    uint8_t *dead; /* bit per id: defined in a function not kept */
} fn_table;

/*
 * The id the instruction at `w` (inside a function, OpFunction included) defines, 0 if
 * none. There, OpLabel is the one instruction with a result but no result type (word 1),
 * and the ones below (those a compute shader can hold) have no result; all others have
 * both, the result in word 2.
 */
static uint32_t body_result(const uint32_t *w)
{
    switch (w[0] & 0xffffu) {
    case SPV_OP_LABEL: return w[1];
    case 0:    /* OpNop */
    case 8:    /* OpLine */
    case 62:   /* OpStore */
    case 63:   /* OpCopyMemory */
    case 64:   /* OpCopyMemorySized */
    case 99:   /* OpImageWrite */
    case 224:  /* OpControlBarrier */
    case 225:  /* OpMemoryBarrier */
    case 228:  /* OpAtomicStore */
    case 246:  /* OpLoopMerge */
    case 247:  /* OpSelectionMerge */
    case 249:  /* OpBranch */
    case 250:  /* OpBranchConditional */
    case 251:  /* OpSwitch */
    case 252:  /* OpKill */
    case 253:  /* OpReturn */
    case 254:  /* OpReturnValue */
    case 255:  /* OpUnreachable */
    case 256:  /* OpLifetimeStart */
    case 257:  /* OpLifetimeStop */
    case 317:  /* OpNoLine */
    case 4416: /* OpTerminateInvocation */
    case SPV_OP_FUNCTION_END: return 0;
    }
    return (w[0] >> 16) > 2 ? w[2] : 0;
}

static int is_dead(const fn_table *t, uint32_t id)
{
    return id < t->bound && (t->dead[id / 8] >> (id % 8) & 1u);
}

/* Whether the instruction at `w` decorates (its word 1) an id a dropped function defined. */
static int decorates_dead(const fn_table *t, const uint32_t *w)
{
    switch (w[0] & 0xffffu) {
    case SPV_OP_DECORATE:
    case SPV_OP_MEMBER_DECORATE:
    case SPV_OP_DECORATE_ID:
    case SPV_OP_DECORATE_STRING:
    case SPV_OP_MEMBER_DECORATE_STRING: return (w[0] >> 16) > 1 && is_dead(t, w[1]);
    }
    return 0; /* glslang makes no decoration groups (OpGroupDecorate) */
}

static uint32_t fn_index(const fn_table *t, uint32_t id)
{
    for (uint32_t f = 0; f < t->n; f++) {
        if (t->id[f] == id)
            return f;
    }
    return UINT32_MAX;
}

/* The callee of OpFunctionCall at `w`, after the retargeting from -> to. */
static uint32_t callee(const uint32_t *w, const uint32_t *from, const uint32_t *to, uint32_t n_map)
{
    for (uint32_t r = 0; r < n_map; r++) {
        if (w[3] == from[r])
            return to[r];
    }
    return w[3];
}

/* Marks in t->dead the ids that the functions not kept define. */
static void mark_dead(fn_table *t, const uint32_t *code)
{
    memset(t->dead, 0, (t->bound + 7) / 8);
    for (uint32_t f = 0; f < t->n; f++) {
        for (uint32_t i = t->start[f]; !t->keep[f] && i < t->end[f]; i += code[i] >> 16) {
            uint32_t id = body_result(code + i);
            if (id != 0 && id < t->bound)
                t->dead[id / 8] |= (uint8_t)(1u << (id % 8));
        }
    }
}

/* Lists the functions (t->id etc. sized by a first count), marks those the entry point
   reaches once the calls are retargeted, and the ids the others define. */
static int fn_scan(const tf_host_api *host, const uint32_t *code, uint32_t words, fn_table *t,
                   const uint32_t *from, const uint32_t *to, uint32_t n_map)
{
    memset(t, 0, sizeof *t);
    uint32_t cap = 0;
    for (uint32_t i = SPV_HEADER_WORDS; i < words; i += code[i] >> 16) {
        if ((code[i] >> 16) == 0)
            return 0;
        cap += (code[i] & 0xffffu) == SPV_OP_FUNCTION;
    }
    t->bound = code[SPV_BOUND_WORD];
    uint32_t *mem =
        host->alloc(host->ctx, cap * (3 * sizeof(uint32_t) + 1) + (t->bound + 7) / 8 + 1, 0);
    if (mem == NULL)
        return 0;
    t->id = mem;
    t->start = mem + cap;
    t->end = mem + 2 * cap;
    t->keep = (uint8_t *)(mem + 3 * cap);
    t->dead = t->keep + cap;
    for (uint32_t i = SPV_HEADER_WORDS; i < words; i += code[i] >> 16) {
        uint32_t op = code[i] & 0xffffu;
        if (op == SPV_OP_ENTRY_POINT)
            t->entry = code[i + 2];
        else if (op == SPV_OP_FUNCTION && t->n < cap) {
            t->id[t->n] = code[i + 2];
            t->start[t->n] = i;
            t->keep[t->n] = 0;
        } else if (op == SPV_OP_FUNCTION_END && t->n < cap) {
            t->end[t->n++] = i + 1;
        }
    }
    uint32_t f = fn_index(t, t->entry);
    if (f == UINT32_MAX) {
        memset(t->keep, 1, t->n); /* nothing is dropped */
        mark_dead(t, code);
        return 1;
    }
    t->keep[f] = 1;
    for (int changed = 1; changed;) {
        changed = 0;
        for (f = 0; f < t->n; f++) {
            for (uint32_t i = t->start[f]; t->keep[f] && i < t->end[f]; i += code[i] >> 16) {
                if ((code[i] & 0xffffu) != SPV_OP_FUNCTION_CALL)
                    continue;
                uint32_t g = fn_index(t, callee(code + i, from, to, n_map));
                if (g != UINT32_MAX && !t->keep[g])
                    changed = t->keep[g] = 1;
            }
        }
    }
    mark_dead(t, code);
    return 1;
}

/*
 * `shader` for one program: the calls retargeted, the functions nothing calls
 * any more dropped (every_op, the op functions the program does not use:
 * otherwise the driver reads, inlines and lowers them all the same), with the
 * decorations of the ids they defined (NoContraction of `precise` values),
 * and the debug names dropped.
 */
tf_status tf__vk_program_module(vk_engine *e, uint32_t shader, const uint32_t *spec,
                                VkShaderModule *out)
{
    const vk_spirv *src = &tf__vk_spirv[shader];
    uint32_t words = (uint32_t)(src->size / 4), n_steps = spec[0] >> 3 & 31u;
    fused_ids ids;
    memset(&ids, 0, sizeof ids);
    for (uint32_t i = SPV_HEADER_WORDS; i < words;) {
        uint32_t n = src->code[i] >> 16;
        if (n == 0 || i + n > words)
            break;
        if ((src->code[i] & 0xffffu) == SPV_OP_NAME && n > 2)
            note_name(&ids, src->code[i + 1], src->code + i + 2, n - 2);
        i += n;
    }
    /* from[r] -> to[r]: the stand-ins of the program's steps, and every_op. */
    uint32_t from[2 * TF_FUSED_MAX_STEPS + 2], to[2 * TF_FUSED_MAX_STEPS + 2], n_map = 0;
    int vector = ids.slot[1][0] != 0; /* the VEC4 modules also have the scalar slots (tail) */
    for (int v = 0; v <= vector; v++) {
        for (uint32_t k = 0; k < n_steps; k++) {
            uint32_t w = spec[1 + k], binary = w & 1u, op = w >> 1 & 127u;
            from[n_map] = ids.slot[v][k];
            to[n_map++] = op < 32 ? ids.op[v][binary][op] : 0;
        }
        from[n_map] = ids.every[v];
        to[n_map++] = ids.slot[v][0];
    }
    const tf_host_api *host = e->host;
    for (uint32_t r = 0; r < n_map; r++) {
        if (from[r] == 0 || to[r] == 0)
            return tf__vk_fail(host, TF_ERR_BACKEND,
                               "vulkan: FUSED: module %s lacks a function the program needs "
                               "(call %u of %u; built with stripped names?)",
                               src->name, r, n_map);
    }
    fn_table t;
    uint32_t *code = host->alloc(host->ctx, src->size, 0);
    if (code == NULL || !fn_scan(host, src->code, words, &t, from, to, n_map)) {
        host->free(host->ctx, code);
        return tf__vk_fail(host, TF_ERR_OUT_OF_MEMORY, "vulkan: out of memory (FUSED module)");
    }
    uint32_t used = SPV_HEADER_WORDS, f = 0;
    memcpy(code, src->code, SPV_HEADER_WORDS * sizeof *code);
    for (uint32_t i = SPV_HEADER_WORDS; i < words;) {
        uint32_t n = src->code[i] >> 16, op = src->code[i] & 0xffffu;
        while (f < t.n && t.end[f] <= i)
            f++;
        if (f < t.n && i == t.start[f] && !t.keep[f]) {
            i = t.end[f]; /* a function nothing calls */
            continue;
        }
        if (op != SPV_OP_NAME && op != SPV_OP_MEMBER_NAME && !decorates_dead(&t, src->code + i)) {
            memcpy(code + used, src->code + i, n * sizeof *code);
            if (op == SPV_OP_FUNCTION_CALL)
                code[used + 3] = callee(src->code + i, from, to, n_map);
            used += n;
        }
        i += n;
    }
    host->free(host->ctx, t.id);
    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = used * sizeof *code,
                                   .pCode = code};
    VkResult r = vkCreateShaderModule(e->dev, &mi, NULL, out);
    host->free(host->ctx, code);
    if (r != VK_SUCCESS)
        return tf__vk_fail_vk(host, "vkCreateShaderModule (FUSED program)", r);
    return TF_OK;
}
