/*
 * op_table.c - the table from recorded op ids to their names and AD rules.
 *
 * Each ops_*.c file defines `tf__rule_<op>` next to the op's forward code;
 * this file only gathers them, so adding an op touches its own file, the
 * TF_OP_LIST in eager_internal.h, and one line here.
 */
#include "eager_internal.h"

#define DECLARE_RULE_(name) extern const tf_op_rule tf__rule_##name;
TF_OP_LIST(DECLARE_RULE_)
#undef DECLARE_RULE_

static const tf_op_rule *const k_rules[TF_OP_COUNT_] = {
#define RULE_ENTRY_(name) [TF_OP_##name] = &tf__rule_##name,
    TF_OP_LIST(RULE_ENTRY_)
#undef RULE_ENTRY_
};

const tf_op_rule *tf__op_rule(uint32_t op)
{
    static const tf_op_rule unknown = {.name = "?", .vjp = NULL, .jvp = NULL};
    return op < TF_OP_COUNT_ ? k_rules[op] : &unknown;
}
