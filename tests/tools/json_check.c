/* json_check.c - recursive-descent JSON validator for the CLI tests. */
#include <string.h>

#include "json_check.h"

typedef struct {
    const char *p;
    int depth;
} parser;

static int value(parser *ps);

static void ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t')
        ps->p++;
}

static int hex4(const char *p)
{
    for (int i = 0; i < 4; i++)
        if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
            return 0;
    return 1;
}

static int string(parser *ps)
{
    if (*ps->p != '"')
        return 0;
    for (ps->p++; *ps->p != '"'; ps->p++) {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            ps->p++;
            if (*ps->p == 'u') {
                if (!hex4(ps->p + 1))
                    return 0;
                ps->p += 4;
            } else if (!*ps->p || !strchr("\"\\/bfnrt", *ps->p)) {
                return 0;
            }
        }
    }
    ps->p++;
    return 1;
}

static int digits(parser *ps)
{
    const char *start = ps->p;
    while (*ps->p >= '0' && *ps->p <= '9')
        ps->p++;
    return ps->p > start;
}

static int number(parser *ps)
{
    if (*ps->p == '-')
        ps->p++;
    if (*ps->p == '0')
        ps->p++;
    else if (!digits(ps))
        return 0;
    if (*ps->p == '.') {
        ps->p++;
        if (!digits(ps))
            return 0;
    }
    if (*ps->p == 'e' || *ps->p == 'E') {
        ps->p++;
        if (*ps->p == '+' || *ps->p == '-')
            ps->p++;
        if (!digits(ps))
            return 0;
    }
    return 1;
}

static int literal(parser *ps, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(ps->p, word, n) != 0)
        return 0;
    ps->p += n;
    return 1;
}

/* Elements separated by ',' until `close`; members when `object`. */
static int sequence(parser *ps, char close, int object)
{
    ps->p++;
    ws(ps);
    if (*ps->p == close) {
        ps->p++;
        return 1;
    }
    for (;;) {
        ws(ps);
        if (object) {
            if (!string(ps))
                return 0;
            ws(ps);
            if (*ps->p++ != ':')
                return 0;
        }
        if (!value(ps))
            return 0;
        ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p != close)
            return 0;
        ps->p++;
        return 1;
    }
}

static int value(parser *ps)
{
    if (++ps->depth > 64)
        return 0;
    ws(ps);
    int ok;
    switch (*ps->p) {
    case '{': ok = sequence(ps, '}', 1); break;
    case '[': ok = sequence(ps, ']', 0); break;
    case '"': ok = string(ps); break;
    case 't': ok = literal(ps, "true"); break;
    case 'f': ok = literal(ps, "false"); break;
    case 'n': ok = literal(ps, "null"); break;
    default: ok = number(ps); break;
    }
    ps->depth--;
    return ok;
}

int json_check(const char *text)
{
    parser ps = {text, 0};
    if (!value(&ps))
        return 0;
    ws(&ps);
    return *ps.p == '\0';
}
