/*
 * prim_names.c - names of primitives and their sub-operations, for messages
 * and tools, made from engine_abi.h's lists (the engines use the same lists,
 * so a name is the same wherever it is printed).
 */
#include "engine_internal.h"

#define NAME_ENTRY_(NAME, name, value) [value] = #name,

static const char *const k_prims[TF_PRIM_COUNT_] = {TF_PRIM_LIST(NAME_ENTRY_)};
static const char *const k_unary[TF_UNARY_COUNT_] = {TF_UNARY_OP_LIST(NAME_ENTRY_)};
static const char *const k_binary[TF_BINARY_COUNT_] = {TF_BINARY_OP_LIST(NAME_ENTRY_)};
static const char *const k_compare[TF_COMPARE_COUNT_] = {TF_COMPARE_OP_LIST(NAME_ENTRY_)};
static const char *const k_reduce[TF_REDUCE_COUNT_] = {TF_REDUCE_OP_LIST(NAME_ENTRY_)};

#undef NAME_ENTRY_

/* Entry i of a table of n names; "?" past its end or for a gap. */
static const char *name_in(const char *const *names, size_t n, uint32_t i)
{
    return i < n && names[i] ? names[i] : "?";
}
#define NAME_IN_(table, i) name_in(table, sizeof table / sizeof table[0], i)

TF_API const char *tf_prim_name(tf_prim prim)
{
    return NAME_IN_(k_prims, (uint32_t)prim);
}

TF_API const char *tf_prim_op_name(tf_prim prim, uint32_t op)
{
    switch (prim) {
    case TF_PRIM_UNARY: return NAME_IN_(k_unary, op);
    case TF_PRIM_BINARY: return NAME_IN_(k_binary, op);
    case TF_PRIM_COMPARE: return NAME_IN_(k_compare, op);
    case TF_PRIM_REDUCE: return NAME_IN_(k_reduce, op);
    default: return ""; /* FUSED's steps carry their own ops; the call has none */
    }
}

bool tf__prim_known(tf_prim prim, uint32_t op)
{
    switch (prim) {
    case TF_PRIM_UNARY: return op < TF_UNARY_COUNT_;
    case TF_PRIM_BINARY: return op < TF_BINARY_COUNT_;
    case TF_PRIM_COMPARE: return op < TF_COMPARE_COUNT_;
    case TF_PRIM_REDUCE: return op < TF_REDUCE_COUNT_;
    case TF_PRIM_FUSED: /* op: outputs - 1, or (1.6) TF_FUSED_REDUCE_QUERY(r, m) */
        return op < TF_FUSED_MAX_OUTPUTS ||
               (TF_FUSED_QUERY_IS_REDUCE(op) && TF_FUSED_QUERY_OUTPUTS(op) < TF_FUSED_MAX_OUTPUTS &&
                TF_FUSED_QUERY_REDUCE_OP(op) < TF_REDUCE_COUNT_);
    default: return (uint32_t)prim < TF_PRIM_COUNT_;      /* no sub-op: op is not read */
    }
}
