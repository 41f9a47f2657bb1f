/*
 * The emulation's shared virtual clock, as one page of a file that the harness's clock
 * controller writes (harness/model/clock.py) and every reader maps read-only:
 *
 *     V(real) = base_v + (real - base_real) * rate        (rate 0: the clock stands still)
 *
 * real is CLOCK_REALTIME as the kernel gives it. The controller changes the page under a
 * sequence lock (seq odd while it writes, and while it moves the daemons' clock before the
 * page); a reader retries until it sees one even seq before and after its reads. poll_s is the longest a waiter may sleep in real seconds
 * before it reads the page again (short when the controller moves the clock by jumps).
 */
#ifndef HARNESS_VCLOCK_H
#define HARNESS_VCLOCK_H

#include <stdint.h>
#include <time.h>

#define VCLOCK_MAGIC 0x314b434f4c435648ULL /* "HVCLOCK1", little-endian */
#define VCLOCK_SIZE 4096

struct vclock_page {
    uint64_t magic;
    volatile uint64_t seq;
    volatile double base_v;    /* virtual epoch seconds at base_real */
    volatile double base_real; /* real epoch seconds */
    volatile double rate;      /* virtual seconds per real second, >= 0 */
    volatile double poll_s;    /* longest real wait before reading the page again */
};

struct vclock_reading {
    double base_v, base_real, rate, poll_s;
};

static inline struct vclock_reading vclock_read(const struct vclock_page *p)
{
    struct vclock_reading r;
    uint64_t before, after;
    for (;;) {
        before = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
        if (before & 1) { /* the controller is moving the daemons, then the page: wait */
            const struct timespec pause = {0, 200000};
            nanosleep(&pause, NULL);
            continue;
        }
        r.base_v = p->base_v;
        r.base_real = p->base_real;
        r.rate = p->rate;
        r.poll_s = p->poll_s;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        after = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
        if (before == after)
            return r;
    }
}

static inline double vclock_at(struct vclock_reading r, double real)
{
    return r.base_v + (real - r.base_real) * r.rate;
}

#endif
