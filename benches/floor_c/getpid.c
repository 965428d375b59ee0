/* The seed's syscall measurement in C: getpid as a raw syscall, pinned,
 * timed in batches of 1000; prints the median ns per call over 2000
 * batches. Independent of Synapse's own code, for benches/calibrate_vs_c.sh. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int cpu = argc > 1 ? atoi(argv[1]) : 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) { perror("sched_setaffinity"); return 1; }
    enum { BATCHES = 2000, BATCH = 1000 };
    static double samples[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        double t = now_ns();
        for (int i = 0; i < BATCH; i++) syscall(SYS_getpid);
        samples[b] = (now_ns() - t) / BATCH;
    }
    qsort(samples, BATCHES, sizeof samples[0], cmp);
    printf("%.1f\n", samples[BATCHES / 2]);
    return 0;
}
