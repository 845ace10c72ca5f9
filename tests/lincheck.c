/* lincheck.c: the register linearizability checker of lincheck.h. */
#include "lincheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hist_add(lin_hist *h, lin_kind kind, int64_t inv, int64_t resp, const char *value) {
    pthread_mutex_lock(&h->mu);
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 256;
        h->ops = realloc(h->ops, h->cap * sizeof(*h->ops));
    }
    lin_op *o = &h->ops[h->n++];
    *o = (lin_op){.kind = kind, .invoke = inv, .response = resp};
    snprintf(o->value, sizeof(o->value), "%s", value);
    pthread_mutex_unlock(&h->mu);
}

/* The value id an op writes or reads: the index of the write that wrote it,
 * -1 for the initial value, -2 for a value no write in the history wrote. */
static int value_id(const lin_op *ops, size_t n, const char *value) {
    if (!value[0])
        return -1;
    for (size_t i = 0; i < n; i++)
        if (ops[i].kind == LIN_WRITE && !strcmp(ops[i].value, value))
            return (int)i;
    return -2;
}

/* The memo: a set of (linearized-ops bitset, register value), open
 * addressing over a flat array of records of `words + 1` uint64s. */
typedef struct memo {
    size_t words, cap, used;
    uint64_t *recs; /* cap records; record[words] == 0 marks a free slot */
} memo;

static uint64_t memo_hash(const uint64_t *rec, size_t words) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i <= words; i++) {
        h ^= rec[i];
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
    }
    return h;
}

static int memo_insert_raw(memo *m, const uint64_t *rec) {
    size_t stride = m->words + 1;
    for (size_t i = memo_hash(rec, m->words) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        uint64_t *slot = &m->recs[i * stride];
        if (slot[m->words] == 0) {
            memcpy(slot, rec, stride * sizeof(*rec));
            m->used++;
            return 1;
        }
        if (!memcmp(slot, rec, stride * sizeof(*rec)))
            return 0;
    }
}

/* 1 if (bits, state) was new (now inserted), 0 if seen before, -1 when the
 * memo would pass its size limit. */
static int memo_insert(memo *m, const uint64_t *bits, int state) {
    if (2 * (m->used + 1) > m->cap) {
        if (m->cap >= ((size_t)1 << 20))
            return -1;
        memo bigger = {.words = m->words, .cap = m->cap ? 2 * m->cap : 1024};
        bigger.recs = calloc(bigger.cap, (bigger.words + 1) * sizeof(uint64_t));
        for (size_t i = 0; i < m->cap; i++)
            if (m->recs[i * (m->words + 1) + m->words])
                memo_insert_raw(&bigger, &m->recs[i * (m->words + 1)]);
        free(m->recs);
        *m = bigger;
    }
    uint64_t rec[m->words + 1];
    memcpy(rec, bits, m->words * sizeof(*rec));
    rec[m->words] = (uint64_t)(state + 3); /* never 0: 0 is a free slot */
    return memo_insert_raw(m, rec);
}

/* Call and return entries, sorted by time, in a doubly linked list with a
 * sentinel at index 0. A write that may never end has no return entry. */
typedef struct lin_entry {
    int op, is_call, ret; /* ret: index of the call's return entry or -1 */
    int64_t t;
} lin_entry;

static int entry_cmp(const void *a, const void *b) {
    const lin_entry *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    /* Equal times overlap: calls first, so neither op precedes the other. */
    if (x->is_call != y->is_call)
        return x->is_call ? -1 : 1;
    return x->op - y->op;
}

typedef struct lin_list {
    int *next, *prev;
} lin_list;

static void list_unlink(lin_list *l, int e) {
    l->next[l->prev[e]] = l->next[e];
    if (l->next[e] >= 0)
        l->prev[l->next[e]] = l->prev[e];
}

static void list_relink(lin_list *l, int e) {
    l->next[l->prev[e]] = e;
    if (l->next[e] >= 0)
        l->prev[l->next[e]] = e;
}

/* 1: the history of one key is linearizable for a register that starts
 * empty; 0: it is not; -1: the search passed its memory bound. Lowe's
 * formulation of Wing & Gong: walk the calls still pending in time order;
 * linearize one (lift it out of the list) if the register allows it and the
 * (linearized set, value) pair is new; meeting a return entry means the op
 * it closes can no longer be placed, so undo the last choice. */
int lin_check(const lin_op *ops, size_t n) {
    size_t ne = 1;
    lin_entry *ev = calloc(2 * n + 1, sizeof(*ev));
    int *vid = calloc(n + 1, sizeof(int));
    for (size_t i = 0; i < n; i++) {
        vid[i] = ops[i].kind == LIN_WRITE ? (int)i : value_id(ops, n, ops[i].value);
        ev[ne++] = (lin_entry){.op = (int)i, .is_call = 1, .t = ops[i].invoke};
        if (ops[i].response != T_UNKNOWN)
            ev[ne++] = (lin_entry){.op = (int)i, .is_call = 0, .t = ops[i].response};
    }
    qsort(ev + 1, ne - 1, sizeof(*ev), entry_cmp);
    int *ret_of = malloc((n + 1) * sizeof(int));
    for (size_t i = 0; i < n; i++)
        ret_of[i] = -1;
    for (size_t e = 1; e < ne; e++)
        if (!ev[e].is_call)
            ret_of[ev[e].op] = (int)e;
    for (size_t e = 1; e < ne; e++)
        ev[e].ret = ev[e].is_call ? ret_of[ev[e].op] : -1;
    lin_list l = {malloc(ne * sizeof(int)), malloc(ne * sizeof(int))};
    for (size_t e = 0; e < ne; e++) {
        l.next[e] = e + 1 < ne ? (int)e + 1 : -1;
        l.prev[e] = e ? (int)e - 1 : -1;
    }
    size_t remaining = 0; /* ops with a return entry still to linearize */
    for (size_t i = 0; i < n; i++)
        remaining += ops[i].response != T_UNKNOWN;
    memo m = {.words = (n + 63) / 64 ? (n + 63) / 64 : 1};
    uint64_t *bits = calloc(m.words, sizeof(uint64_t));
    int *stack_e = malloc((n + 1) * sizeof(int)), *stack_s = malloc((n + 1) * sizeof(int));
    int sp = 0, state = -1, result = 1, e = l.next[0];
    while (remaining > 0) {
        if (e < 0 || !ev[e].is_call) {
            if (sp == 0) {
                result = 0;
                break;
            }
            sp--;
            e = stack_e[sp];
            state = stack_s[sp];
            int op = ev[e].op;
            bits[op / 64] &= ~(1ULL << (op % 64));
            if (ev[e].ret >= 0) {
                list_relink(&l, ev[e].ret);
                remaining++;
            }
            list_relink(&l, e);
            e = l.next[e];
            continue;
        }
        int op = ev[e].op;
        int is_write = ops[op].kind == LIN_WRITE;
        if (!is_write && vid[op] != state) {
            e = l.next[e];
            continue;
        }
        int new_state = is_write ? op : state;
        bits[op / 64] |= 1ULL << (op % 64);
        int fresh = memo_insert(&m, bits, new_state);
        if (fresh < 0) {
            result = -1;
            break;
        }
        if (!fresh) {
            bits[op / 64] &= ~(1ULL << (op % 64));
            e = l.next[e];
            continue;
        }
        stack_e[sp] = e;
        stack_s[sp++] = state;
        state = new_state;
        list_unlink(&l, e);
        if (ev[e].ret >= 0) {
            list_unlink(&l, ev[e].ret);
            remaining--;
        }
        e = l.next[0];
    }
    free(stack_e);
    free(stack_s);
    free(bits);
    free(m.recs);
    free(l.next);
    free(l.prev);
    free(ret_of);
    free(vid);
    free(ev);
    return result;
}

/* Reads that are stale beyond doubt: read r returned v, yet some write w2
 * completed before r was invoked and w2 itself started after the write of v
 * completed (or v is the initial value), so w2 must be ordered between. */
int lin_stale_reads(const lin_op *ops, size_t n) {
    int stale = 0;
    for (size_t r = 0; r < n; r++) {
        if (ops[r].kind != LIN_READ)
            continue;
        int v = value_id(ops, n, ops[r].value);
        for (size_t w = 0; w < n; w++) {
            if (ops[w].kind != LIN_WRITE || (int)w == v || ops[w].response == T_UNKNOWN ||
                ops[w].response >= ops[r].invoke)
                continue;
            if (v == -1 || (v >= 0 && ops[v].response < ops[w].invoke)) {
                stale++;
                break;
            }
        }
    }
    return stale;
}

/* Reads whose interval overlaps some write's: where the search has a
 * choice to make (a history without them is checked trivially). */
int lin_overlapping_reads(const lin_op *ops, size_t n) {
    int count = 0;
    for (size_t r = 0; r < n; r++) {
        if (ops[r].kind != LIN_READ)
            continue;
        for (size_t w = 0; w < n; w++)
            if (ops[w].kind == LIN_WRITE && ops[w].invoke <= ops[r].response &&
                ops[r].invoke <= ops[w].response) {
                count++;
                break;
            }
    }
    return count;
}
