/* The seed's context-switch measurement in C: a parent and a forked child
 * pass one byte back and forth over two pipes, the parent on CPU A and the
 * child on CPU B (the same CPU: context switches; two: cross-CPU
 * wake-ups). Prints the median ns per hand-over (half a round trip) over
 * 20000 round trips. For benches/calibrate_vs_c.sh. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
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

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) { perror("sched_setaffinity"); exit(1); }
}

int main(int argc, char **argv) {
    int a = argc > 1 ? atoi(argv[1]) : 0, b = argc > 2 ? atoi(argv[2]) : 0;
    enum { ROUNDS = 20000, WARM = 100 };
    static double samples[ROUNDS];
    int ping[2], pong[2];
    char c = 1;
    if (pipe(ping) || pipe(pong)) { perror("pipe"); return 1; }
    pid_t child = fork();
    if (child == 0) {
        /* Only the other side's write end may keep the pipe open. */
        close(ping[1]);
        close(pong[0]);
        pin(b);
        while (read(ping[0], &c, 1) == 1) if (write(pong[1], &c, 1) != 1) break;
        _exit(0);
    }
    close(ping[0]);
    close(pong[1]);
    pin(a);
    for (int i = 0; i < ROUNDS + WARM; i++) {
        double t = now_ns();
        if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) { perror("pipe"); return 1; }
        if (i >= WARM) samples[i - WARM] = (now_ns() - t) / 2;
    }
    close(ping[1]);
    waitpid(child, NULL, 0);
    qsort(samples, ROUNDS, sizeof samples[0], cmp);
    printf("%.1f\n", samples[ROUNDS / 2]);
    return 0;
}
