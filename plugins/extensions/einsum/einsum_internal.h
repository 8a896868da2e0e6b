/*
 * einsum_internal.h - the pieces of the tenferro.einsum module and what they
 * pass each other:
 *
 *   einsum_parse.c    subscripts -> labels per operand and output (ein_expr)
 *   einsum_problem.c  + shapes -> extents, the diagonals and one-operand sums
 *                     each operand needs, and the network the path sees (ein_net)
 *   einsum_path.c     the cost model, greedy (plain and randomized), and
 *                     the two dynamic programmings (over all subsets, over
 *                     connected subnetworks)
 *   einsum_search.c   the time-budgeted search: randomized greedy restarts,
 *                     subtree reconfiguration, annealing over trees
 *   einsum_plan.c     a problem and its path -> an executable plan (flat
 *                     bytes, cached) and the numpy-style description
 *   einsum_exec.c     running a plan through the host's ops table
 *   einsum_module.c   the op, its cache keys, the planner interface, the
 *                     descriptor
 *
 * Memory: every allocation goes through an ein_mem, the host's allocator
 * inside the op, the C library's in the planner interface (no session
 * there). Labels are dense ids; a set of labels is a bitset of `words`
 * uint64_t.
 */
#ifndef EINSUM_INTERNAL_H
#define EINSUM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tenferro/einsum_abi.h>

/* ---- memory ---- */

typedef struct ein_mem {
    void *(*alloc)(void *ctx, size_t size); /* zeroed */
    void (*free)(void *ctx, void *p);
    void *ctx;
} ein_mem;

/* The C library's allocator; the host's (zeroing what it returns). */
const ein_mem *ein_mem_libc(void);
ein_mem ein_mem_host(const tf_host_api *host);
/* count * size zeroed bytes, NULL on overflow or failure. */
void *ein_calloc(const ein_mem *m, size_t count, size_t size);
void ein_free(const ein_mem *m, void *p);

/* ---- errors (what the op reports; the planner interface copies them out) ---- */

/* Which op argument an error is about, for report_argument. */
enum {
    EIN_ARG_SUBSCRIPTS = 0,
    EIN_ARG_OPTIMIZE = 1,
    EIN_ARG_MEMORY = 2,
    EIN_ARG_OPERANDS = 3
};

typedef struct ein_err {
    tf_status status;
    uint32_t arg;     /* EIN_ARG_* */
    int64_t position; /* byte offset in the subscripts, -1 if none */
    int64_t operand;  /* -1 if none */
    char message[512];
} ein_err;

/* Records a failure in e (printf-style) and returns status. */
tf_status ein_fail(ein_err *e, tf_status status, uint32_t arg, int64_t position, int64_t operand,
                   const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

/* ---- parsing (einsum_parse.c) ---- */

/* Ellipsis labels carry codes above every Unicode code point: EIN_ELLIPSIS + k is
   the k-th ellipsis axis counted from the right. */
#define EIN_ELLIPSIS 0x110000u

typedef struct ein_expr {
    uint32_t n_ops;
    uint32_t n_labels;
    uint32_t *code;     /* per label: the code point, or EIN_ELLIPSIS + k */
    uint32_t *rank;     /* per operand: its term's length (its rank) */
    uint32_t **term;    /* per operand, per axis: the label */
    int64_t **term_pos; /* per operand, per axis: the index's byte offset (ellipsis: the '...') */
    uint32_t out_rank;
    uint32_t *out; /* the output's labels */
    int64_t *out_pos;
    int64_t out_start; /* byte offset after "->", or the length when implicit */
    bool implicit;
    const char *text; /* the subscripts (borrowed) */
    size_t length;
    void *block; /* everything above, one allocation */
} ein_expr;

/* Parses subscripts for n operands of the given ranks (<= TF_MAX_RANK). */
tf_status ein_parse(const ein_mem *m, const char *subscripts, uint32_t n, const uint32_t *ranks,
                    ein_expr *out, ein_err *err);
void ein_expr_free(const ein_mem *m, ein_expr *e);
/* Appends label `code`'s UTF-8 bytes (ellipsis labels as the letter `ell[k]`) to buf. */
size_t ein_put_label(char *buf, uint32_t code, const uint32_t *ell_codes);

/* ---- the network a path sees (einsum_problem.c, einsum_path.c) ---- */

typedef struct ein_net {
    uint32_t n; /* tensors */
    uint32_t n_labels;
    uint32_t words; /* uint64_t per label set */
    const double *extent;
    const uint64_t *sets; /* n * words */
    const uint64_t *out;  /* words */
} ein_net;

static inline bool ein_has(const uint64_t *set, uint32_t l)
{
    return (set[l >> 6] >> (l & 63)) & 1u;
}
static inline void ein_add(uint64_t *set, uint32_t l)
{
    set[l >> 6] |= (uint64_t)1 << (l & 63);
}

/* Product of the extents of the labels in set; number of labels in it. */
double ein_set_size(const ein_net *net, const uint64_t *set);
uint32_t ein_set_count(uint32_t words, const uint64_t *set);

typedef struct ein_limits {
    double memory;     /* largest intermediate; 0: none */
    uint32_t max_rank; /* 0: none */
    double seconds;    /* search budget */
    uint64_t seed;
} ein_limits;

/* A path: n - 1 steps of two SSA ids each (0..n-1 tensors, n+k step k's result). */
typedef struct ein_path {
    uint32_t n;
    uint32_t (*steps)[2];
    double flops, largest;
    uint32_t method; /* tf_einsum_optimize that produced it */
} ein_path;

/*
 * Walks `steps` over net: total flops (numpy's count), largest result, and
 * whether every result fits the limits. False for steps that are not a
 * valid contraction order.
 */
bool ein_path_cost(const ein_mem *m, const ein_net *net, const uint32_t (*steps)[2],
                   const ein_limits *lim, double *flops, double *largest, bool *feasible);

/* The methods (einsum_path.c, einsum_search.c). steps has room for n - 1. */
tf_status ein_greedy(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                     uint32_t (*steps)[2], ein_err *err);
/* One randomized greedy run: `temperature` > 0 samples the pairs, costmod weighs the
   inputs' sizes; *state the random stream. Returns false when it found no path. */
bool ein_greedy_random(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                       double temperature, double costmod, uint64_t *state, uint32_t (*steps)[2]);
tf_status ein_optimal(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                      uint32_t (*steps)[2], ein_err *err);
/* DP over connected subnetworks; TF_ERR_UNSUPPORTED when it outgrows its budget. */
tf_status ein_dp(const ein_mem *m, const ein_net *net, const ein_limits *lim, uint32_t (*steps)[2],
                 ein_err *err);
tf_status ein_search(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                     uint32_t (*steps)[2], ein_err *err);
/* Improves a path in place by subtree reconfiguration until no window of up to
   `window` pieces improves (or `passes` sweeps); deterministic. */
tf_status ein_reconfigure(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                          uint32_t window, uint32_t passes, uint32_t (*steps)[2]);
/* AUTO beyond the DP's reach: plain greedy and count - 1 randomized restarts
   (a fixed stream), the best annealed for min(64 n, 8192) moves and polished
   by reconfiguration; deterministic. */
tf_status ein_restarts_polished(const ein_mem *m, const ein_net *net, const ein_limits *lim,
                                uint32_t count, uint32_t (*steps)[2], ein_err *err);
/* Chooses and runs the method (AUTO resolved) and costs the result into path. */
tf_status ein_find_path(const ein_mem *m, const ein_net *net, uint32_t method,
                        const ein_limits *lim, ein_path *path, ein_err *err);

/*
 * The exact subset DP on k <= 16 label sets (the pieces), output `out`:
 * every tree, outer products included. choice[S] (2^k entries, caller's) is
 * the lowest-indexed child subset of S's best split; returns the least
 * flops, or INFINITY when no tree fits the limits. `bound` prunes subsets
 * costing more (INFINITY for none).
 */
double ein_subset_dp(const ein_mem *m, const ein_net *net, uint32_t k, const uint64_t *sets,
                     const uint64_t *out, const ein_limits *lim, double bound, uint32_t *choice);

/* Flops (numpy's count) and result of contracting a and b when `keep` is what
   stays needed; writes the result's labels to res. */
double ein_pair_cost(const ein_net *net, const uint64_t *a, const uint64_t *b, const uint64_t *res);

/* ---- problems (einsum_problem.c) ---- */

#define EIN_MAX_DIAG 7 /* a rank-8 term with one index eight times */

/* What one operand needs before the path: diagonals, then one reduce_sum. */
typedef struct ein_prep {
    uint8_t n_diag;
    uint8_t rank;                      /* the operand's rank */
    uint8_t diag_rank[EIN_MAX_DIAG];   /* rank before each diagonal */
    int8_t diag_perm[EIN_MAX_DIAG][8]; /* the transpose putting the pair last */
    uint8_t n_sum;
    int8_t sum_axes[8]; /* summed after the diagonals */
    uint8_t n_labels;   /* labels left, in axis order: */
    uint32_t labels[8];
} ein_prep;

typedef struct ein_problem {
    ein_expr expr;
    double *extent; /* per label */
    ein_prep *prep; /* per operand */
    uint64_t *sets; /* the net's */
    uint64_t *out;
    ein_net net;
    double prep_flops;
    void *block;
} ein_problem;

/*
 * Parses and binds shapes: extents per label (1 broadcasts; a repeated index
 * in one operand needs equal extents), each operand's diagonals and sums,
 * and the network. dtype checks are the op's.
 */
tf_status ein_problem_init(const ein_mem *m, const char *subscripts, uint32_t n,
                           const uint32_t *ranks, const int64_t *const *shapes, ein_problem *p,
                           ein_err *err);
void ein_problem_free(const ein_mem *m, ein_problem *p);

/* ---- plans (einsum_plan.c) ---- */

typedef struct ein_step {
    uint32_t lhs, rhs;
    tf_dot_general_params dims;
} ein_step;

/* A plan in one block of bytes (cached as is): this header, n_ops ein_prep,
   n_steps ein_step. */
typedef struct ein_plan {
    uint32_t magic;
    uint32_t size; /* bytes of the whole block */
    uint32_t n_ops, n_steps;
    uint32_t out_rank;
    int8_t out_perm[8]; /* the last tensor's axis for each output axis */
    double flops, largest;
} ein_plan;

static inline ein_prep *ein_plan_prep(const ein_plan *p)
{
    return (ein_prep *)(void *)((char *)(uintptr_t)p + sizeof(ein_plan));
}
static inline ein_step *ein_plan_steps(const ein_plan *p)
{
    return (ein_step *)(void *)((char *)ein_plan_prep(p) + p->n_ops * sizeof(ein_prep));
}

#define EIN_PLAN_MAGIC 0x65696e31u /* "ein1" */

/* The plan of problem p along path (steps in SSA ids); free with ein_free. */
tf_status ein_plan_build(const ein_mem *m, const ein_problem *p, const ein_path *path,
                         ein_plan **out, ein_err *err);

/* The numpy-style description of p along path; free with ein_free (one block). */
tf_status ein_describe(const ein_mem *m, const ein_problem *p, const ein_path *path,
                       tf_einsum_path **out, ein_err *err);
/* Text (numpy's layout) or JSON of a description; free with ein_free. */
tf_status ein_format(const ein_mem *m, const tf_einsum_path *path, int json, char **text);

/* ---- execution (einsum_exec.c) ---- */

/* Runs plan on the operands through ctx's ops; *out a new reference. */
tf_status ein_execute(const tf_ext_rule_ctx *ctx, const ein_plan *plan, tf_ext_tensor *const *ops,
                      tf_ext_tensor **out);

#endif /* EINSUM_INTERNAL_H */
