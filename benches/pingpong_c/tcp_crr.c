/* The bare TCP_CRR loop (netperf's connect-request-response): per
 * transaction socket, connect, TCP_NODELAY, SIZE bytes written, a blocking
 * recv until SIZE bytes are back, close. Pinned to CPU. WARMUP
 * transactions first, then COUNT timed as a whole. Prints
 * "transactions_per_s p50_ns p99_ns" (the per-transaction times from
 * before socket() to the reply in hand).
 *
 *   tcp_crr PORT COUNT WARMUP CPU [SIZE]   (SIZE default 64, at most 4096) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: tcp_crr PORT COUNT WARMUP CPU [SIZE]\n");
        return 2;
    }
    long count = atol(argv[2]), warmup = atol(argv[3]);
    int size = argc == 6 ? atoi(argv[5]) : 64, on = 1;
    if (size < 1 || size > 4096) size = 64;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[4]), &set);
    sched_setaffinity(0, sizeof set, &set);
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    long long *rtt = malloc(sizeof *rtt * count), began = 0;
    char buf[4096] = {0};
    for (long i = -warmup; i < count; i++) {
        if (i == 0) began = now_ns();
        long long t0 = now_ns();
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&dst, sizeof dst)) {
            perror("connect");
            return 1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        if (send(fd, buf, size, 0) != size) {
            perror("send");
            return 1;
        }
        for (int got = 0; got < size;) {
            ssize_t n = recv(fd, buf + got, size - got, 0);
            if (n <= 0) {
                perror("recv");
                return 1;
            }
            got += n;
        }
        if (i >= 0) rtt[i] = now_ns() - t0;
        close(fd);
    }
    double secs = (now_ns() - began) / 1e9;
    qsort(rtt, count, sizeof *rtt, cmp);
    printf("%.0f %lld %lld\n", count / secs, rtt[count / 2], rtt[count * 99 / 100]);
    return 0;
}
