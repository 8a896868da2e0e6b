/*
 * graph.c - what every derivative starts from: the walk of the recorded
 * graph from an output, giving the tensors it reaches indices in
 * topological order and hashing a structural fingerprint of it on the way,
 * and the derivative program prepared for that fingerprint (which steps
 * run, in which order, with which inputs needing cotangents), kept in the
 * runtime's prepared-derivative cache and replayed for every graph of the
 * same structure (autodiff.c runs it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff_internal.h"

/* ---- the graph walk ---- */

/*
 * Walks in progress, oldest first. A walk stores each tensor's index in the
 * tensor itself (walk_id, walk_index) rather than in a map: the walk touches
 * the tensor anyway, while a map probe is one more cache miss per edge, and
 * on graphs of thousands of ops that was most of a backward's walk. Marks
 * are never cleared (that would be another pass over every tensor): a mark
 * whose walk ended is stale and may be claimed by the next walk. Walk ids
 * only grow, and a walk knows, from the list at its start, below which id
 * every walk had already ended; a mark it cannot prove stale (another walk
 * on a shared leaf, a nested walk) sends that tensor to its own map.
 */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static graph *live_head, *live_tail;
static uint64_t live_next_id = 1;

static void walk_begin(graph *g)
{
    pthread_mutex_lock(&live_lock);
    g->id = live_next_id++;
    g->prev = live_tail;
    g->next = NULL;
    if (live_tail)
        live_tail->next = g;
    else
        live_head = g;
    live_tail = g;
    g->stale_below = live_head->id;
    pthread_mutex_unlock(&live_lock);
}

static void walk_end(graph *g)
{
    if (!g->id)
        return;
    pthread_mutex_lock(&live_lock);
    if (g->prev)
        g->prev->next = g->next;
    else
        live_head = g->next;
    if (g->next)
        g->next->prev = g->prev;
    else
        live_tail = g->prev;
    pthread_mutex_unlock(&live_lock);
    g->id = 0;
}

static size_t slot_of(const graph *g, const tf_eager *e)
{
    size_t i = tf__hash_word(TF_HASH_SEED, (uintptr_t)e) & g->mask;
    while (g->keys[i] && g->keys[i] != e)
        i = (i + 1) & g->mask;
    return i;
}

static bool map_grow(graph *g)
{
    size_t cap = g->mask ? (g->mask + 1) * 2 : 64;
    tf_eager **keys = tf__calloc(cap, sizeof *keys);
    size_t *vals = tf__alloc(cap * sizeof *vals); /* read only where a key is set */
    if (!keys || !vals) {
        tf__free(keys);
        tf__free(vals);
        return false;
    }
    tf_eager **ok = g->keys;
    size_t *ov = g->vals, old = g->mask ? g->mask + 1 : 0;
    g->keys = keys;
    g->vals = vals;
    g->mask = cap - 1;
    for (size_t i = 0; i < old; i++)
        if (ok[i]) {
            size_t j = slot_of(g, ok[i]);
            g->keys[j] = ok[i];
            g->vals[j] = ov[i];
        }
    tf__free(ok);
    tf__free(ov);
    return true;
}

/* Index of e once walked, or n+1 (a tensor still on the walk's stack is unseen). */
size_t tf__graph_lookup_map(const graph *g, const tf_eager *e)
{
    if (!g->mask)
        return g->n + 1;
    size_t i = slot_of(g, e);
    return g->keys[i] ? g->vals[i] : g->n + 1;
}

/* Takes e's mark for this walk when no live walk can hold it. */
static bool claim(const graph *g, tf_eager *e)
{
    uint64_t m = atomic_load_explicit(&e->walk_id, memory_order_relaxed);
    return m < g->stale_below &&
           atomic_compare_exchange_strong_explicit(&e->walk_id, &m, g->id, memory_order_relaxed,
                                                   memory_order_relaxed);
}

static bool map_set(graph *g, tf_eager *e, size_t v)
{
    if (!g->mask || (g->used + 1) * 2 > g->mask)
        if (!map_grow(g))
            return false;
    size_t i = slot_of(g, e);
    g->used += !g->keys[i];
    g->keys[i] = e;
    g->vals[i] = v;
    return true;
}

static bool append(graph *g, tf_eager *e)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        tf_eager **at = tf__alloc(cap * sizeof *at); /* read only below n */
        if (!at)
            return false;
        if (g->n)
            memcpy(at, g->at, g->n * sizeof *at);
        tf__free(g->at);
        g->at = at;
        g->cap = cap;
    }
    g->at[g->n] = e;
    if (claim(g, e)) {
        e->walk_index = g->n++;
        return true;
    }
    return map_set(g, e, g->n++);
}

void tf__graph_free(graph *g)
{
    walk_end(g);
    tf__free(g->at);
    tf__free(g->keys);
    tf__free(g->vals);
}

static uint64_t mix_meta(uint64_t h, const tf_tensor *v)
{
    return tf__hash_words(tf__hash_word(h, (uint64_t)v->dtype << 8 | v->rank), v->shape, v->rank);
}

/*
 * Folds one finished tensor into the fingerprint: a result by its op,
 * attributes and inputs, a tensor the walk starts from (a leaf, an input it
 * does not enter) by its dtype and shape, which with the ops fix every
 * result's. A result's own value is never read: on a long tape that was one
 * more cache miss per op.
 */
static void fingerprint(graph *g, const tf_eager *e)
{
    uint64_t h = tf__hash_word(g->hash, (uint64_t)e->tracked << 1 | (e->slot != NULL));
    const tf_node *nd = e->node;
    if (!nd) {
        g->hash = mix_meta(h, e->value);
        return;
    }
    h = tf__hash_word(h, (uint64_t)nd->op << 32 | nd->n_inputs);
    if (nd->has_attrs)
        h = tf__attrs_hash(h, nd->attrs);
    for (uint32_t i = 0; i < nd->n_inputs; i++) {
        size_t k = tf__graph_lookup(g, nd->inputs[i]);
        /* a walked input by its index, one the walk did not enter (untracked) by its metadata */
        h = k < g->n ? tf__hash_word(h, (uint64_t)k)
                     : mix_meta(tf__hash_word(h, UINT64_MAX - 1), nd->inputs[i]->value);
    }
    g->hash = h;
}

typedef struct frame {
    tf_eager *e;
    uint32_t next;
} frame;

/*
 * Walks from `root` through recorded nodes (only through tracked tensors
 * when `tracked_only`), giving every tensor reached an index in post-order.
 * A tensor enters the map only when finished: the tape is acyclic (a node's
 * inputs existed before it and never change), so a tensor on the stack is
 * never reached again before it finishes, and marking it would only cost a
 * second map insertion per tensor.
 */
tf_status tf__graph_walk(graph *g, tf_eager *root, bool tracked_only)
{
    size_t cap = 64, top = 0;
    walk_begin(g);
    frame *stack = tf__alloc(cap * sizeof *stack);
    if (!stack)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "autodiff", NULL, "out of memory");
    stack[top++] = (frame){root, 0};
    while (top) {
        frame *f = &stack[top - 1];
        const tf_node *nd = f->e->node;
        if (nd && f->next < nd->n_inputs) {
            tf_eager *in = nd->inputs[f->next++];
            if ((tracked_only && !in->tracked) || tf__graph_lookup(g, in) != g->n + 1)
                continue;
            if (top == cap) {
                frame *bigger = tf__alloc(2 * cap * sizeof *bigger);
                if (!bigger)
                    break;
                memcpy(bigger, stack, cap * sizeof *stack);
                tf__free(stack);
                stack = bigger;
                cap *= 2;
            }
            stack[top++] = (frame){in, 0};
            continue;
        }
        fingerprint(g, f->e);
        if (!append(g, f->e))
            break;
        top--;
    }
    tf__free(stack);
    if (top)
        return tf__error(TF_ERR_OUT_OF_MEMORY, "autodiff", NULL, "out of memory");
    return TF_OK;
}

/* ---- the prepared program ---- */

void tf__program_free(void *p)
{
    program *pr = p;
    if (pr)
        tf__free(pr->steps);
    tf__free(pr);
}

bool tf__graph_is_target(const tf_eager *e, const tf_eager *wrt)
{
    return wrt ? e == wrt : e->slot != NULL;
}

/* needs[i]: graph index i reaches a target through recorded ops. */
bool *tf__graph_needs(const graph *g, const tf_eager *wrt)
{
    bool *needs = tf__calloc(g->n ? g->n : 1, sizeof *needs);
    if (!needs)
        return NULL;
    for (size_t i = 0; i < g->n; i++) {
        const tf_eager *e = g->at[i];
        bool n = tf__graph_is_target(e, wrt);
        for (uint32_t j = 0; !n && e->node && j < e->node->n_inputs; j++) {
            size_t k = tf__graph_lookup(g, e->node->inputs[j]);
            n = k < g->n && needs[k];
        }
        needs[i] = n;
    }
    return needs;
}

static program *prepare(const graph *g, const tf_eager *wrt)
{
    bool *needs = tf__graph_needs(g, wrt);
    program *pr = tf__calloc(1, sizeof *pr);
    if (pr && g->n)
        pr->steps = tf__calloc(g->n, sizeof *pr->steps);
    if (!needs || !pr || (g->n && !pr->steps)) {
        tf__free(needs);
        tf__program_free(pr);
        return NULL;
    }
    pr->n_nodes = g->n;
    pr->active = g->n && needs[g->n - 1];
    for (size_t i = g->n; i-- > 0;) {
        const tf_eager *e = g->at[i];
        if (!needs[i] || !e->node || (wrt && e == wrt))
            continue;
        uint32_t mask = 0;
        for (uint32_t j = 0; j < e->node->n_inputs; j++) {
            size_t k = tf__graph_lookup(g, e->node->inputs[j]);
            if (j >= 32 || (k < g->n && needs[k]))
                mask |= j < 32 ? 1u << j : 0;
        }
        pr->steps[pr->n_steps++] = (step){(uint32_t)i, mask};
    }
    tf__free(needs);
    return pr;
}

typedef struct copy_ctx {
    program *out;
} copy_ctx;

static void copy_program(const void *value, void *user)
{
    const program *src = value;
    copy_ctx *c = user;
    program *p = tf__calloc(1, sizeof *p);
    if (p && src->n_steps)
        p->steps = tf__alloc(src->n_steps * sizeof *p->steps);
    if (!p || (src->n_steps && !p->steps)) {
        tf__program_free(p);
        return;
    }
    p->n_nodes = src->n_nodes;
    p->n_steps = src->n_steps;
    p->active = src->active;
    if (src->n_steps)
        memcpy(p->steps, src->steps, src->n_steps * sizeof *p->steps);
    c->out = p;
}

/* The program for g from the cache, or prepared and cached now. */
program *tf__program_get(tf_runtime *rt, graph *g, const tf_eager *wrt, uint64_t mode)
{
    uint64_t key = tf__hash_word(tf__hash_word(g->hash, atomic_load(&rt->epoch)), mode);
    key = tf__hash_word(key, wrt ? tf__graph_lookup(g, wrt) + 1 : 0);
    copy_ctx c = {NULL};
    if (tf__cache_get(&rt->prepared, key, copy_program, &c) && c.out && c.out->n_nodes == g->n)
        return c.out;
    tf__program_free(c.out);
    program *pr = prepare(g, wrt);
    if (!pr)
        return NULL;
    copy_ctx keep = {NULL};
    copy_program(pr, &keep);
    if (keep.out)
        tf__cache_put(&rt->prepared, key, keep.out,
                      sizeof *keep.out + keep.out->n_steps * sizeof(step), tf__program_free);
    return pr;
}
