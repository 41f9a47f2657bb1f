/* vcmp: run UNDER a time preload; compares what the preload reports with the controller's clock page.
 * Real time comes from a raw syscall (no preload intercepts syscall(SYS_clock_gettime) here).
 * usage: vcmp [samples=2000] [gap_us=500] [clock.bin]
 * prints, per source (time, gettimeofday, REALTIME, TAI, MONOTONIC): min/max of preload - V in
 * virtual seconds, and the mean cost of one preloaded call in ns. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
#include "vclock.h"

#ifndef CLOCK_TAI
#define CLOCK_TAI 11
#endif

static double raw_real(void)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double src(int k)
{
    struct timespec ts;
    struct timeval tv;
    switch (k) {
    case 0: return (double)time(NULL);
    case 1: gettimeofday(&tv, NULL); return tv.tv_sec + tv.tv_usec * 1e-6;
    case 2: clock_gettime(CLOCK_REALTIME, &ts); break;
    case 3: clock_gettime(CLOCK_TAI, &ts); break;
    default: clock_gettime(CLOCK_MONOTONIC, &ts); break;
    }
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000, gap = argc > 2 ? atoi(argv[2]) : 500;
    const char *path = argc > 3 ? argv[3] : "/vc/clock.bin";
    static const char *names[] = {"time", "gettimeofday", "REALTIME", "TAI", "MONOTONIC"};
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); return 2; }
    const struct vclock_page *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    for (int k = 0; k < 5; k++) {
        double lo = 1e18, hi = -1e18, cost = 0;
        for (int i = 0; i < n; i++) {
            double r1 = raw_real();
            double t = src(k);
            double r2 = raw_real();
            double v = vclock_read(p, (r1 + r2) / 2);
            double d = t - v;
            if (k == 0) d += 0.5; /* time() truncates: centre it */
            if (d < lo) lo = d;
            if (d > hi) hi = d;
            cost += (r2 - r1);
            if (gap) usleep(gap);
        }
        printf("%s %+.4f %+.4f %.0f\n", names[k], lo, hi, cost / n * 1e9);
    }
    return 0;
}
