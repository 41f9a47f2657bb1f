/* vwait: job payload for virtual time (probe). Not preloaded: reads the controller's clock page
 * directly, records its virtual start, polls every POLL_MS real ms and exits once the virtual clock
 * has reached start + D. Prints "vwait start=<V> end=<V> real_start=<R> real_end=<R>".
 * usage: vwait D [clock.bin]      (default clock page: /vc/clock.bin) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "vclock.h"

static double real_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: vwait D [clock.bin]\n"); return 2; }
    double d = atof(argv[1]);
    const char *path = argc > 2 ? argv[2] : "/vc/clock.bin";
    int poll_ms = getenv("VWAIT_POLL_MS") ? atoi(getenv("VWAIT_POLL_MS")) : 20;
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); return 2; }
    const struct vclock_page *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 2; }
    double r0 = real_now(), v0 = vclock_read(p, r0), v = v0, r = r0;
    printf("vwait begin v=%.3f real=%.3f\n", v0, r0);
    fflush(stdout);
    struct timespec pause = { poll_ms / 1000, (poll_ms % 1000) * 1000000L };
    while (v < v0 + d) {
        nanosleep(&pause, NULL);
        r = real_now();
        v = vclock_read(p, r);
    }
    printf("vwait end v=%.3f real=%.3f start=%.3f dur_v=%.3f dur_real=%.3f\n", v, r, v0, v - v0, r - r0);
    return 0;
}
