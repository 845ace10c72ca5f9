/* tokenbucket.c: see tokenbucket.h. */
#include "tokenbucket.h"

uint32_t tokenbucket_depth(uint32_t rps, uint32_t burst) {
    if (burst)
        return burst;
    return rps ? rps : 1;
}

static void tokenbucket_refill(tokenbucket *b, uint32_t rps, int64_t cap, int64_t now_us) {
    if (!b->started) {
        b->started = 1;
        b->micro = cap;
        b->last_us = now_us;
        return;
    }
    if (now_us <= b->last_us)
        return;
    int64_t dt = now_us - b->last_us;
    b->last_us = now_us;
    /* dt * rps overflows only past ~290 years at 1M rps: cap dt first. */
    int64_t room = cap - b->micro;
    if (room <= 0 || dt >= (room + rps - 1) / rps) {
        b->micro = cap;
        return;
    }
    b->micro += dt * (int64_t)rps;
}

int tokenbucket_take(tokenbucket *b, uint32_t rps, uint32_t burst, int64_t now_us,
                     int64_t *retry_us) {
    if (retry_us)
        *retry_us = 0;
    if (!rps)
        return 1;
    int64_t cap = (int64_t)tokenbucket_depth(rps, burst) * TOKENBUCKET_UNIT;
    tokenbucket_refill(b, rps, cap, now_us);
    if (b->micro > cap) /* the setting shrank: the bucket shrinks with it */
        b->micro = cap;
    if (b->micro >= TOKENBUCKET_UNIT) {
        b->micro -= TOKENBUCKET_UNIT;
        return 1;
    }
    if (retry_us)
        *retry_us = (TOKENBUCKET_UNIT - b->micro + rps - 1) / rps;
    return 0;
}

int64_t tokenbucket_retry_seconds(int64_t retry_us) {
    int64_t s = (retry_us + 999999) / 1000000;
    return s < 1 ? 1 : s;
}
