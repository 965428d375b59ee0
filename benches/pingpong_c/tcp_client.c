/* The bare TCP ping-pong client: one connection, TCP_NODELAY, SIZE bytes
 * written, then a blocking recv until SIZE bytes are back (however the
 * stream splits them); CLOCK_MONOTONIC around each round trip; WARMUP
 * exchanges first. Pinned to CPU. Prints "p50 p99" in ns.
 *
 * With FLAGS (SO_TIMESTAMPING bits, e.g. 0x898: Synapse's TCP client's RX
 * software stamps), the connection stamps as asked once established and
 * replies are still read with plain recv: the kernel makes the stamps and
 * nobody reads them (what an RX-stamped connection costs a round trip).
 *
 *   tcp_client PORT COUNT WARMUP CPU [SIZE [FLAGS]]   (SIZE default 64, at most 4096) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <linux/net_tstamp.h>

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
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: tcp_client PORT COUNT WARMUP CPU [SIZE [FLAGS]]\n");
        return 2;
    }
    long count = atol(argv[2]), warmup = atol(argv[3]);
    int size = argc >= 6 ? atoi(argv[5]) : 64, on = 1;
    int flags = argc == 7 ? (int)strtol(argv[6], NULL, 0) : 0;
    if (size < 1 || size > 4096) size = 64;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[4]), &set);
    sched_setaffinity(0, sizeof set, &set);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    if (connect(fd, (struct sockaddr *)&dst, sizeof dst)) {
        perror("connect");
        return 1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    if (flags && setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags)) {
        perror("SO_TIMESTAMPING");
        return 1;
    }
    long long *rtt = malloc(sizeof *rtt * count);
    char buf[4096] = {0};
    for (long i = -warmup; i < count; i++) {
        long long t1 = now_ns();
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
        long long t4 = now_ns();
        if (i >= 0) rtt[i] = t4 - t1;
    }
    /* NOSORT=1: no percentiles, the count alone. For instruction counts
     * (benches/instructions.sh): the sort is O(n log n), so it does not
     * cancel between two lengths, and it is not the loop. */
    if (getenv("NOSORT") && atoi(getenv("NOSORT"))) {
        printf("%ld\n", count);
        return 0;
    }
    qsort(rtt, count, sizeof *rtt, cmp);
    printf("%lld %lld\n", rtt[count / 2], rtt[count * 99 / 100]);
    return 0;
}
