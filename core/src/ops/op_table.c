/*
 * op_table.c - the table from recorded op ids to their names and AD rules.
 *
 * Each ops_*.c file defines `tf__rule_<op>` next to the op's forward code;
 * this file only gathers them, so adding an op touches its own file, the
 * family's TF_OPS_ list in ops_internal.h (for elementwise ops, ops.h's
 * lists), and nothing here.
 */
#include "ops_internal.h"

#define TF_BUILTIN_OPS_(X) \
    TF_OPS_ELEMENTWISE(X) TF_OPS_REDUCE(X) TF_OPS_CONTRACT(X) TF_OPS_LAYOUT(X) TF_OPS_INDEX(X)

#define DECLARE_RULE_(NAME, name) extern const tf_op_rule tf__rule_##name;
TF_BUILTIN_OPS_(DECLARE_RULE_)
#undef DECLARE_RULE_

static const tf_op_rule *const k_rules[TF_OP_COUNT_] = {
#define RULE_ENTRY_(NAME, name) [TF_OP_##name] = &tf__rule_##name,
    TF_BUILTIN_OPS_(RULE_ENTRY_)
#undef RULE_ENTRY_
};

/* The rule of every extension op, the extension layer's (it registers it). */
static const tf_op_rule *_Atomic g_extension_rule;

void tf__op_rule_set_extension(const tf_op_rule *rule)
{
    atomic_store_explicit(&g_extension_rule, rule, memory_order_release);
}

const tf_op_rule *tf__op_rule(uint32_t op)
{
    static const tf_op_rule unknown = {.name = "?", .vjp = NULL, .jvp = NULL};
    if (op == TF_OP_extension) {
        const tf_op_rule *r = atomic_load_explicit(&g_extension_rule, memory_order_acquire);
        return r ? r : &unknown;
    }
    return op < TF_OP_COUNT_ && k_rules[op] ? k_rules[op] : &unknown;
}
