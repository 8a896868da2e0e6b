/*
 * cmd_einsum_path.c - `tenferro einsum-path EXPR SHAPES [options]`: the
 * contraction path tenferro.einsum chooses for an expression and operand
 * shapes, with each pairwise step's cost, the total flops (and log10) and
 * the largest intermediate, as numpy.einsum_path prints them, or as JSON.
 *
 * It loads the einsum module from the plugin path like any application and
 * asks its planner interface; no engine, runtime or tensor is involved.
 * Exit status: 0 printed, 1 the module refused the expression or shapes (the
 * reason on stderr, with a caret under the offending character), 2 usage.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tenferro/einsum.h>

#include "cli.h"

#define MAX_OPERANDS 4096

typedef struct shapes {
    uint32_t n;
    uint32_t rank[MAX_OPERANDS];
    int64_t ext[MAX_OPERANDS][TF_MAX_RANK];
    const int64_t *ptr[MAX_OPERANDS];
} shapes;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tenferro einsum-path EXPR SHAPES [--optimize auto|optimal|dp|greedy|search]\n"
            "                            [--memory-limit N] [--seconds S] [--seed N] "
            "[--max-rank R] [--json]\n"
            "  EXPR    NumPy einsum subscripts, e.g. 'ij,jk->ik' (quote it for the shell)\n"
            "  SHAPES  one shape per operand, comma-separated, extents joined by 'x':\n"
            "          '2x3,3x4'; an empty shape is a rank-0 operand (',2x3')\n"
            "  --memory-limit N  no intermediate above N elements (default: none)\n"
            "  --seconds S       the search's time budget (default 1)\n"
            "  --seed N          the search's random stream (default: a fixed one)\n"
            "  --max-rank R      no intermediate above R axes (default: none)\n"
            "exit status: 0 printed, 1 refused (why on stderr), 2 usage\n");
}

/* "2x3,3x4" into s; 0 on success. */
static int parse_shapes(const char *text, shapes *s)
{
    memset(s, 0, sizeof *s);
    const char *p = text;
    for (;;) {
        if (s->n == MAX_OPERANDS)
            return -1;
        uint32_t t = s->n++;
        s->ptr[t] = s->ext[t];
        while (*p && *p != ',') {
            char *end;
            errno = 0;
            long long v = strtoll(p, &end, 10);
            if (end == p || errno || v < 0 || s->rank[t] == TF_MAX_RANK || *p == '-' || *p == '+')
                return -1;
            s->ext[t][s->rank[t]++] = v;
            p = end;
            if (*p == 'x' && p[1] && p[1] != ',')
                p++;
            else if (*p && *p != ',')
                return -1;
        }
        if (!*p)
            return 0;
        p++;
    }
}

static int parse_method(const char *v, uint32_t *out)
{
    static const char *const names[] = {"auto", "optimal", "dp", "greedy", "search"};
    for (uint32_t i = 0; i < 5; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return -1;
}

static int parse_number(const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno || !(d >= 0) || isinf(d))
        return -1;
    *out = d;
    return 0;
}

/* The expression with a caret under byte `pos` (counted in characters). */
static void point_at(const char *expr, int64_t pos)
{
    if (pos < 0)
        return;
    int64_t col = 0;
    for (int64_t i = 0; i < pos && expr[i]; i++)
        col += ((unsigned char)expr[i] & 0xc0) != 0x80; /* UTF-8 continuation bytes add none */
    fprintf(stderr, "  %s\n  %*s^\n", expr, (int)col, "");
}

/* Options after EXPR SHAPES; 0 ok, 2 usage. */
static int parse_options(int argc, char **argv, tf_einsum_options *o, int *json)
{
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0, rank = 0;
        if (strcmp(a, "--json") == 0)
            *json = 1;
        else if (strcmp(a, "--optimize") == 0 && v)
            bad = parse_method(v, &o->optimize), i++;
        else if (strcmp(a, "--memory-limit") == 0 && v)
            bad = parse_number(v, &o->memory_limit), i++;
        else if (strcmp(a, "--seconds") == 0 && v)
            bad = parse_number(v, &o->search_seconds), i++;
        else if (strcmp(a, "--seed") == 0 && v)
            bad = tf_cli_parse_int(v, 1, 1 << 30, &rank), o->seed = (uint64_t)rank, i++;
        else if (strcmp(a, "--max-rank") == 0 && v)
            bad = tf_cli_parse_int(v, 1, 64, &rank), o->max_rank = (uint32_t)rank, i++;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "tenferro einsum-path: bad option or value '%s%s%s'\n", a, v ? " " : "",
                    v ? v : "");
            usage(stderr);
            return 2;
        }
    }
    return 0;
}

static int plan_and_print(const tf_einsum_planner *p, const char *expr, const shapes *s,
                          const tf_einsum_options *o, int json)
{
    tf_einsum_path *path = NULL;
    tf_einsum_error err;
    memset(&err, 0, sizeof err);
    err.struct_size = sizeof err;
    err.position = err.operand = -1;
    tf_status st = p->path(expr, s->n, s->rank, s->ptr, o, &path, &err);
    if (st) {
        fprintf(stderr, "tenferro einsum-path: %s: %s\n", tf_status_name(st), err.message);
        point_at(expr, err.position);
        return 1;
    }
    char *text = NULL;
    st = p->format(path, json, &text);
    if (!st)
        fputs(text, stdout);
    p->text_free(text);
    p->path_free(path);
    if (st)
        fprintf(stderr, "tenferro einsum-path: %s\n", tf_status_name(st));
    return st ? 1 : 0;
}

int tf_cli_einsum_path(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc < 3) {
        usage(stderr);
        return 2;
    }
    static shapes s;
    if (parse_shapes(argv[2], &s)) {
        fprintf(stderr,
                "tenferro einsum-path: bad SHAPES '%s' (e.g. 2x3,3x4; at most %d axes, "
                "%d operands)\n",
                argv[2], TF_MAX_RANK, MAX_OPERANDS);
        return 2;
    }
    tf_einsum_options o = {sizeof o, TF_EINSUM_AUTO, 0, 0, 0, 0, 0};
    int json = 0, rc = parse_options(argc, argv, &o, &json);
    if (rc)
        return rc;
    tf_extension_module *m;
    tf_status st = tf_extension_load("einsum", &m);
    const tf_einsum_planner *p = st ? NULL : tf_einsum_planner_of(m);
    if (!p) {
        fprintf(stderr, "tenferro einsum-path: cannot load the einsum module: %s\n",
                st ? tf_error_message() : "it offers no planner interface");
        return 1;
    }
    return plan_and_print(p, argv[1], &s, &o, json);
}
