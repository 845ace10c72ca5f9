/* cli_print.c: the readable output of the objlog CLI: tables with a header
 * row, sizes with units, "name: value" lines, and the small JSON helpers
 * the commands read answers with. Invariant: every size a person reads is
 * printed by cli_size (units, or exact bytes with --bytes); JSON output
 * always carries exact integers. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON ---- */

const char *cli_jstr(json_t *o, const char *name) {
    const char *s = json_string_value(json_object_get(o, name));
    return s ? s : "";
}

void cli_print_fields(json_t *o, const char *const *names) {
    for (size_t i = 0; names[i]; i++) {
        const char *v = cli_jstr(o, names[i]);
        if (*v)
            printf("%s: %s\n", names[i], v);
    }
}

int cli_request_id_ok(const char *s) {
    size_t n = strspn(s, "0123456789abcdefABCDEF");
    return n == 32 && s[n] == '\0';
}

long long cli_jint(json_t *o, const char *name) {
    return (long long)json_integer_value(json_object_get(o, name));
}

unsigned long long cli_ju64(json_t *o, const char *name) {
    long long v = cli_jint(o, name);
    return v < 0 ? 0 : (unsigned long long)v;
}

void cli_print_json_flags(json_t *j, size_t flags) {
    char *s = j ? json_dumps(j, flags) : NULL;
    printf("%s\n", s ? s : "{}");
    free(s);
    json_decref(j);
}

void cli_print_json(json_t *j) { cli_print_json_flags(j, JSON_COMPACT); }

void cli_pick(json_t *o, json_t *src, const char *const *keep) {
    for (int i = 0; keep[i]; i++) {
        json_t *v = json_object_get(src, keep[i]);
        if (!v || json_is_null(v) || (json_is_string(v) && !*json_string_value(v)))
            continue;
        json_object_set(o, keep[i], v);
    }
}

void cli_print_flat(const char *prefix, json_t *o) {
    const char *name;
    json_t *v;
    json_object_foreach(o, name, v) {
        char full[256];
        snprintf(full, sizeof(full), "%s%s", prefix, name);
        if (json_is_object(v)) {
            char sub[260];
            snprintf(sub, sizeof(sub), "%s.", full);
            cli_print_flat(sub, v);
        } else if (json_is_string(v)) {
            if (*json_string_value(v)) /* empty says nothing: no blank field */
                printf("%s: %s\n", full, json_string_value(v));
        } else if (json_is_integer(v)) {
            printf("%s: %lld\n", full, (long long)json_integer_value(v));
        } else if (json_is_boolean(v)) {
            printf("%s: %s\n", full, json_is_true(v) ? "true" : "false");
        } else if (!json_is_null(v)) {
            char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            printf("%s: %s\n", full, d ? d : "");
            free(d);
        }
    }
}

int cli_print_object(cli *c, json_t *j) {
    if (c->json) {
        cli_print_json(j);
        return 0;
    }
    cli_print_flat("", j);
    json_decref(j);
    return 0;
}

/* ---- words and sizes ---- */

const char *cli_plural(size_t n, const char *one, const char *many) {
    return n == 1 ? one : many;
}

void cli_size(const cli *c, unsigned long long n, char *out, size_t size) {
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (c->bytes) {
        snprintf(out, size, "%llu", n);
        return;
    }
    if (n < 1024) {
        snprintf(out, size, "%llu B", n);
        return;
    }
    double v = (double)n / 1024.0;
    int u = 0;
    while (v >= 1023.95 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(out, size, "%.1f %s", v, units[u]);
}

/* ---- tables ---- */

void cli_table_add(cli_table *t, const char *const *row) {
    if (t->nrows == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        char **n = realloc(t->cells, cap * (size_t)t->ncols * sizeof(*n));
        if (!n)
            return;
        t->cells = n;
        t->cap = cap;
    }
    for (int i = 0; i < t->ncols; i++)
        t->cells[t->nrows * (size_t)t->ncols + (size_t)i] = strdup(row[i] ? row[i] : "");
    t->nrows++;
}

static void table_row_print(const cli_table *t, const int *w, const char *const *row) {
    for (int i = 0; i < t->ncols; i++) {
        const char *cell = row[i] ? row[i] : "";
        int last = i == t->ncols - 1;
        if (t->right[i])
            printf("%*s", w[i], cell);
        else if (last)
            fputs(cell, stdout);
        else
            printf("%-*s", w[i], cell);
        fputs(last ? "\n" : "  ", stdout);
    }
}

void cli_table_print_free(cli_table *t) {
    int w[CLI_TABLE_MAX_COLS];
    for (int i = 0; i < t->ncols; i++)
        w[i] = (int)strlen(t->head[i]);
    for (size_t r = 0; r < t->nrows; r++)
        for (int i = 0; i < t->ncols; i++) {
            const char *cell = t->cells[r * (size_t)t->ncols + (size_t)i];
            int l = cell ? (int)strlen(cell) : 0;
            w[i] = l > w[i] ? l : w[i];
        }
    if (t->nrows)
        table_row_print(t, w, t->head);
    for (size_t r = 0; r < t->nrows; r++)
        table_row_print(t, w, (const char *const *)&t->cells[r * (size_t)t->ncols]);
    for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}

/* ---- listings ---- */

int cli_list_output(cli *c, json_t *j, void (*print)(cli *, json_t *)) {
    if (!j)
        return CLI_EXIT_FAIL;
    if (c->json) {
        cli_print_json(j);
        return CLI_EXIT_OK;
    }
    print(c, j);
    json_decref(j);
    return CLI_EXIT_OK;
}

const char *cli_truncated_note(json_t *j) {
    return json_is_true(json_object_get(j, "is_truncated"))
               ? " (truncated; --all lists the rest)" : "";
}

void cli_print_prefixes(json_t *j) {
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(j, "common_prefixes"), i, v)
        printf("PRE %s\n", json_string_value(v) ? json_string_value(v) : "");
}

