/* The bare ping-pong client: as lean as the kernel allows. A connected UDP
 * socket, pinned to CPU, sending 8 bytes and spinning on
 * recv(MSG_DONTWAIT) for the answer; CLOCK_MONOTONIC around each round
 * trip; WARMUP exchanges first. Prints "p50 p99" in ns.
 *
 * BLOCK=1: sleep in a blocking recv instead of spinning (the blocking
 * loop Synapse's default client is measured against).
 *
 * With FLAGS (SO_TIMESTAMPING bits, e.g. 0x4890), the socket stamps as
 * asked, replies are read with recvmsg and their control data, and the
 * error queue is drained after each round trip (outside the timed part):
 * what each kind of kernel stamp costs a round trip, with nothing else.
 *
 *   client PORT COUNT WARMUP CPU [FLAGS] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: client PORT COUNT WARMUP CPU [FLAGS]\n");
        return 2;
    }
    int flags = argc == 6 ? (int)strtol(argv[5], NULL, 0) : 0;
    /* PEEK=1: spin on a 1-byte recv(MSG_PEEK), and read the reply with its
     * control data only once it is there. */
    int peek = getenv("PEEK") && atoi(getenv("PEEK"));
    /* PLAIN=1: with FLAGS, read replies with plain recv all the same: the
     * kernel makes the stamps asked for and nobody reads them (what an
     * RX-stamped socket costs a packet outside the sample). */
    int plain = getenv("PLAIN") && atoi(getenv("PLAIN"));
    /* CATCHER=1: as Synapse's client, a second, unconnected socket shares
     * the port (SO_REUSEPORT) to take other sources' datagrams. */
    int catcher = getenv("CATCHER") && atoi(getenv("CATCHER"));
    int wait = getenv("BLOCK") && atoi(getenv("BLOCK")) ? 0 : MSG_DONTWAIT;
    long count = atol(argv[2]), warmup = atol(argv[3]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[4]), &set);
    sched_setaffinity(0, sizeof set, &set);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    if (catcher) {
        int on = 1;
        struct sockaddr_in me = {.sin_family = AF_INET};
        socklen_t len = sizeof me;
        inet_pton(AF_INET, "127.0.0.1", &me.sin_addr);
        int other = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
        if (bind(fd, (struct sockaddr *)&me, sizeof me) ||
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) ||
            getsockname(fd, (struct sockaddr *)&me, &len) ||
            setsockopt(other, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) ||
            bind(other, (struct sockaddr *)&me, sizeof me)) {
            perror("catcher");
            return 1;
        }
    }
    if (connect(fd, (struct sockaddr *)&dst, sizeof dst)) {
        perror("connect");
        return 1;
    }
    if (flags && setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags)) {
        perror("SO_TIMESTAMPING");
        return 1;
    }
    long long *rtt = malloc(sizeof *rtt * count);
    char buf[64] = {0}, control[256];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    for (long i = -warmup; i < count; i++) {
        long long t1 = now_ns();
        if (send(fd, buf, 8, 0) != 8) {
            perror("send");
            return 1;
        }
        for (;;) {
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            char one;
            if (peek && recv(fd, &one, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN) continue;
            ssize_t n = flags && !plain ? recvmsg(fd, &msg, wait)
                                        : recv(fd, buf, sizeof buf, wait);
            if (n >= 0) break;
            if (errno != EAGAIN) {
                perror("recv");
                return 1;
            }
        }
        long long t4 = now_ns();
        if (i >= 0) rtt[i] = t4 - t1;
        for (;;) { /* the TX stamps, after the round trip */
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            if (!flags || plain || recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) break;
        }
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
