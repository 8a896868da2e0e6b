/*
 * extension_outputs.c - extension ABI 1.3: the output values of one call of
 * an op that asked for them (TF_EXT_OP_RULES_READ_OUTPUTS), kept with the
 * tape nodes of its outputs (tf_attrs.aux, released by the runtime through
 * tf_attrs.aux_release when a node dies), and handed to its first-order
 * rules as constants (tf_ext_call.outputs) so that they need not run the
 * forward kernel again. docs/extensions.md, "ABI 1.3".
 */
#include <stdatomic.h>

#include "extensions_internal.h"

/*
 * The values (tf_tensor, not the eager tensors: those own the nodes that
 * refer to this, a cycle) of every output of one call, one reference per
 * node that keeps it (tf_attrs.aux); the last node to die frees it.
 */
struct tf_ext_kept {
    atomic_uint refs;
    uint32_t n;
    tf_tensor *vals[TF_EXT_MAX_OUTPUTS];
};

/* tf_attrs.aux_release: gives back one node's reference. Any thread. */
void tf__ext_kept_release(void *p)
{
    tf_ext_kept *k = p;
    if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (uint32_t j = 0; j < k->n; j++)
        tf_tensor_release(k->vals[j]);
    tf__free(k);
}

/*
 * The record of vals[] with one reference per output, or NULL when op r
 * keeps none, no node could be recorded, or memory is short (its rules then
 * recompute the outputs, as for any op: no error).
 */
tf_ext_kept *tf__ext_kept_new(tf_session *s, const tf_ext_oprec *r, tf_eager *const *tensors,
                              tf_tensor *const *vals)
{
    bool tracked = false;
    for (uint32_t k = 0; k < r->n_tensors; k++)
        tracked = tracked || tensors[k]->tracked;
    if (!r->keeps_outputs || !tf__recording(s->rt) || !(tracked || tf__capturing(s->rt)))
        return NULL;
    tf_ext_kept *k = tf__alloc(sizeof *k);
    if (!k)
        return NULL;
    k->n = r->desc->n_outputs;
    atomic_init(&k->refs, k->n);
    for (uint32_t j = 0; j < k->n; j++) {
        tf_tensor_retain(vals[j]);
        k->vals[j] = vals[j];
    }
    return k;
}

/*
 * The call's outputs as constants of session s for a rule of node nd, in
 * call->outputs (e[], released by rule_outputs_end), when the node kept
 * them and the derivative is not recorded; otherwise call->outputs stays
 * NULL and the rule recomputes.
 */
tf_status tf__ext_rule_outputs_begin(tf_session *s, const tf_node *nd, tf_ext_call *call,
                                     tf_eager **e)
{
    const tf_ext_kept *k = nd->attrs->aux;
    if (!k || tf__recording(s->rt))
        return TF_OK;
    for (uint32_t j = 0; j < k->n; j++) {
        if (!(e[j] = tf__eager_new(s->rt, k->vals[j], false))) {
            while (j--)
                tf_eager_release(e[j]);
            return TF_ERR_OUT_OF_MEMORY;
        }
    }
    call->n_outputs = k->n;
    call->outputs = (tf_ext_tensor *const *)e;
    return TF_OK;
}

void tf__ext_rule_outputs_end(const tf_ext_call *call)
{
    for (uint32_t j = 0; j < call->n_outputs; j++)
        tf_eager_release((tf_eager *)call->outputs[j]);
}
