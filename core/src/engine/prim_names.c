/* prim_names.c - names of primitives and their sub-operations, for messages and tools. */
#include "engine_internal.h"

static const char *const k_prims[TF_PRIM_COUNT_] = {
    "fill", "iota", "unary", "binary", "compare", "select", "convert", "reduce",
    "dot_general", "copy", "pad", "concatenate", "gather", "scatter", "dynamic_slice",
    "dynamic_update_slice", "fused",
};

static const char *const k_unary[TF_UNARY_COUNT_] = {
    "neg", "abs", "sign", "exp", "log", "expm1", "log1p", "sin", "cos", "tanh",
    "sqrt", "rsqrt", "erf", "sigmoid", "reciprocal", "square", "logical_not", "floor", "ceil",
};

static const char *const k_binary[TF_BINARY_COUNT_] = {
    "add", "sub", "mul", "div", "pow", "max", "min", "rem", "and", "or", "xor",
};

static const char *const k_compare[TF_COMPARE_COUNT_] = {"eq", "ne", "lt", "le", "gt", "ge"};

static const char *const k_reduce[TF_REDUCE_COUNT_] = {"sum", "prod", "max", "min"};

TF_API const char *tf_prim_name(tf_prim prim)
{
    return (unsigned)prim < TF_PRIM_COUNT_ ? k_prims[prim] : "?";
}

TF_API const char *tf_prim_op_name(tf_prim prim, uint32_t op)
{
    switch (prim) {
    case TF_PRIM_UNARY:
        return op < TF_UNARY_COUNT_ ? k_unary[op] : "?";
    case TF_PRIM_BINARY:
        return op < TF_BINARY_COUNT_ ? k_binary[op] : "?";
    case TF_PRIM_COMPARE:
        return op < TF_COMPARE_COUNT_ ? k_compare[op] : "?";
    case TF_PRIM_REDUCE:
        return op < TF_REDUCE_COUNT_ ? k_reduce[op] : "?";
    default: /* FUSED's steps carry their own ops; the call has none */
        return "";
    }
}
