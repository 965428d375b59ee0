/* The least a measuring client does a round trip, in bare C: the bare
 * client with RX software stamps (client.c, BLOCK=1, FLAGS=0x18: the same
 * system calls, the error queue polled after each round trip), plus what
 * any instrument must add to it before its numbers can be trusted and
 * used:
 *   - the request carries its sequence number, and a reply is taken only
 *     if it echoes it (anything else is counted as a stray and waited
 *     past);
 *   - the RX software stamp is read out of the control data;
 *   - the RTT goes into a log-bucket histogram (HdrHistogram's layout, 3
 *     significant digits: an index from the leading zeros, one increment);
 *   - a 64-byte record of the round trip is pushed into a single-producer
 *     ring (an acquire load of the reader's position, the slot written,
 *     a release store of the writer's).
 * Nothing else: no loss, late or duplicate classification, no jitter, no
 * timeouts. benches/instructions.sh counts it (`c-floor`) to show where
 * a ratio to the bare loop can and cannot go.
 *
 *   instrument_floor PORT COUNT WARMUP CPU      (prints the strays, the
 *   median bucket's count and the records pushed, so nothing is elided) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>

#define RING 32768 /* more than any run here: the push never finds it full */
#define SUB_BUCKETS 2048 /* 3 significant digits */

struct record {
    uint64_t seq, at_ns, rtt_ns, rx_ns, t1_ns;
    uint32_t kind, flags;
    uint64_t spare[2];
};

static struct record ring[RING];
static uint64_t writer, reader; /* reader: a consumer's, never moved here */
static uint64_t counts[64 * SUB_BUCKETS / 2];

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* HdrHistogram's index for `v` (lowest 1, 3 significant digits). */
static inline size_t bucket_of(uint64_t v) {
    const unsigned half = 10; /* log2(SUB_BUCKETS / 2) */
    unsigned bucket = 64 - __builtin_clzll(v | (SUB_BUCKETS - 1)) - 11;
    return ((size_t)bucket << half) + (v >> bucket);
}

static inline int push(const struct record *r) {
    uint64_t w = writer;
    if (w - __atomic_load_n(&reader, __ATOMIC_ACQUIRE) == RING) return 0;
    ring[w & (RING - 1)] = *r;
    __atomic_store_n(&writer, w + 1, __ATOMIC_RELEASE);
    return 1;
}

static uint64_t rx_stamp(struct msghdr *msg) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) {
            struct scm_timestamping ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            return ts.ts[0].tv_sec * 1000000000ULL + ts.ts[0].tv_nsec;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: instrument_floor PORT COUNT WARMUP CPU\n");
        return 2;
    }
    long count = atol(argv[2]), warmup = atol(argv[3]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[4]), &set);
    sched_setaffinity(0, sizeof set, &set);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    if (connect(fd, (struct sockaddr *)&dst, sizeof dst) ||
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags)) {
        perror("socket");
        return 1;
    }
    char buf[64] = {0}, control[256];
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    long long start = now_ns();
    uint64_t strays = 0, pushed = 0;
    for (long i = -warmup; i < count; i++) {
        uint64_t seq = (uint64_t)(i + warmup);
        long long t1 = now_ns();
        memcpy(buf, &seq, sizeof seq);
        if (send(fd, buf, 8, 0) != 8) {
            perror("send");
            return 1;
        }
        uint64_t rx;
        for (;;) {
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            ssize_t n = recvmsg(fd, &msg, 0);
            if (n < 0) {
                if (errno == EINTR) continue;
                perror("recv");
                return 1;
            }
            uint64_t got;
            memcpy(&got, buf, sizeof got);
            if (n >= 8 && got == seq) {
                rx = rx_stamp(&msg);
                break;
            }
            strays++;
        }
        long long t4 = now_ns();
        uint64_t rtt = (uint64_t)(t4 - t1);
        if (i >= 0) {
            counts[bucket_of(rtt | 1)]++;
            struct record r = {.seq = seq, .at_ns = (uint64_t)(t4 - start), .rtt_ns = rtt,
                               .rx_ns = rx, .t1_ns = (uint64_t)t1, .kind = 1};
            pushed += push(&r);
        }
        for (;;) { /* the error queue, as client.c with FLAGS */
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) break;
        }
    }
    uint64_t most = 0;
    for (size_t b = 0; b < sizeof counts / sizeof *counts; b++)
        if (counts[b] > most) most = counts[b];
    printf("%llu %llu %llu\n", (unsigned long long)strays, (unsigned long long)most,
           (unsigned long long)pushed);
    return 0;
}
