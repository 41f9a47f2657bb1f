/* The probe's shared virtual clock, as the controller (probe.py, real clock) publishes it.
 * A 4 KiB file holding one struct, written in place under a sequence lock:
 *   V(real) = base_v + (real - base_real) * rate      (rate 0 = clock held still)
 * real is CLOCK_REALTIME as the kernel gives it (read with a raw syscall-free vDSO call that no
 * preload intercepts: see vclock_real_now). Written from scratch for this probe. */
#ifndef VCLOCK_H
#define VCLOCK_H
#include <stdint.h>
#include <time.h>

struct vclock_page {
    volatile uint64_t seq;      /* odd while the controller writes */
    volatile double base_v;     /* virtual epoch seconds at base_real */
    volatile double base_real;  /* real epoch seconds */
    volatile double rate;       /* virtual seconds per real second; 0 = held */
    volatile double sleep_scale;/* real seconds a virtual second of waiting lasts (shim only) */
};

static inline double vclock_read(const struct vclock_page *p, double real_now)
{
    uint64_t s1, s2;
    double bv, br, r;
    do {
        s1 = p->seq;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        bv = p->base_v; br = p->base_real; r = p->rate;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        s2 = p->seq;
    } while ((s1 & 1) || s1 != s2);
    return bv + (real_now - br) * r;
}
#endif
