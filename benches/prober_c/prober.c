/* The bare prober: what an agent's loop must do at the least, in C, to
 * probe PEERS echo ports on 127.0.0.1 at RATE requests/s each, every peer
 * on its own phase. It wakes on a TICK_US grid (as the agent does), sends
 * every request due by then (a clock read and one sendto each), and sleeps
 * in ppoll until the next tick or a reply; a reply is read with a clock
 * read. No timestamps, no matching beyond a counter, no histograms.
 *
 *   prober FIRST_PORT PEERS RATE SECONDS TICK_US CPU one|mmsg|stamps|sendmmsg
 *
 * MODE one: recvfrom per reply until EAGAIN. MODE mmsg: one recvmmsg per
 * wake-up (up to 64). MODE stamps: as one, with Synapse's default kernel
 * stamps (SO_TIMESTAMPING: TX SCHED and SND, RX software, OPT_ID), each
 * reply read with recvmsg and its control data, and the error queue
 * drained (recvmmsg, 16 at a time) once after each tick's sends, as the
 * agent does. MODE sendmmsg: as mmsg, and a tick's requests leave in one
 * sendmmsg (one clock read for all of them: the RTT of each but the first
 * then includes the sending of those before it). Prints what it sent,
 * received and stamped. Its CPU is read from
 * /proc by the script, as the agent's is. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <linux/net_tstamp.h>

#define BATCH 64

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

struct peer {
    struct sockaddr_in to;
    uint64_t due;
    uint64_t seq;
};

static int by_due(const void *a, const void *b) {
    uint64_t x = ((const struct peer *)a)->due, y = ((const struct peer *)b)->due;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: prober FIRST_PORT PEERS RATE SECONDS TICK_US CPU one|mmsg|stamps|sendmmsg\n");
        return 2;
    }
    int first = atoi(argv[1]), peers = atoi(argv[2]), rate = atoi(argv[3]);
    uint64_t secs = atoi(argv[4]), tick = (uint64_t)atoi(argv[5]) * 1000;
    int batch_send = strcmp(argv[7], "sendmmsg") == 0;
    int mmsg = batch_send || strcmp(argv[7], "mmsg") == 0, stamps = strcmp(argv[7], "stamps") == 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[6]), &set);
    sched_setaffinity(0, sizeof set, &set);
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in me = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &me.sin_addr);
    if (bind(fd, (struct sockaddr *)&me, sizeof me)) {
        perror("bind");
        return 1;
    }
    if (stamps) {
        int on = SOF_TIMESTAMPING_TX_SCHED | SOF_TIMESTAMPING_TX_SOFTWARE |
                 SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
                 SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY |
                 SOF_TIMESTAMPING_OPT_TX_SWHW;
        if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &on, sizeof on)) {
            perror("SO_TIMESTAMPING");
            return 1;
        }
    }
    uint64_t interval = 1000000000u / rate;
    struct peer *p = calloc(peers, sizeof *p);
    uint64_t start = now_ns() + 1000000;
    for (int i = 0; i < peers; i++) {
        p[i].to = me;
        p[i].to.sin_port = htons(first + i);
        /* A fixed spread of phases (Knuth's multiplicative hash). */
        p[i].due = start + ((uint32_t)(i * 2654435761u) % interval);
    }
    /* One interval for all: the order of due times never changes. */
    qsort(p, peers, sizeof *p, by_due);
    char bufs[BATCH][64];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    struct sockaddr_in froms[BATCH];
    for (int i = 0; i < BATCH; i++) {
        iov[i] = (struct iovec){bufs[i], sizeof bufs[i]};
        msgs[i].msg_hdr = (struct msghdr){.msg_name = &froms[i], .msg_iov = &iov[i], .msg_iovlen = 1};
    }
    /* Control data: one reply's RX stamp, or a TX stamp and its extended
     * error (stamps mode). */
    char control[BATCH][128];
    struct mmsghdr errs[16];
    struct iovec none = {NULL, 0};
    for (int i = 0; i < 16; i++)
        errs[i].msg_hdr = (struct msghdr){.msg_iov = &none, .msg_iovlen = 1};
    uint64_t end = start + secs * 1000000000u, sent = 0, received = 0, rtt_sum = 0, tx = 0, rx = 0;
    int next = 0;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    for (;;) {
        uint64_t now = now_ns();
        if (now >= end) break;
        struct mmsghdr out[BATCH];
        uint64_t payloads[BATCH][2];
        struct iovec out_iov[BATCH];
        int queued = 0;
        while (batch_send && p[next].due <= now && queued < BATCH) {
            payloads[queued][0] = p[next].seq++;
            payloads[queued][1] = now;
            out_iov[queued] = (struct iovec){payloads[queued], sizeof payloads[queued]};
            out[queued].msg_hdr = (struct msghdr){.msg_name = &p[next].to, .msg_namelen = sizeof p[next].to,
                                                  .msg_iov = &out_iov[queued], .msg_iovlen = 1};
            p[next].due += interval;
            next = (next + 1) % peers;
            queued++;
        }
        int went = queued ? sendmmsg(fd, out, queued, 0) : 0;
        sent += went > 0 ? went : 0;
        while (!batch_send && p[next].due <= now) {
            uint64_t msg[2] = {p[next].seq++, now_ns()};
            sendto(fd, msg, sizeof msg, 0, (struct sockaddr *)&p[next].to, sizeof p[next].to);
            p[next].due += interval;
            sent++;
            next = (next + 1) % peers;
        }
        while (stamps) {
            for (int i = 0; i < 16; i++) {
                errs[i].msg_hdr.msg_control = control[i];
                errs[i].msg_hdr.msg_controllen = sizeof control[i];
            }
            int n = recvmmsg(fd, errs, 16, MSG_ERRQUEUE | MSG_DONTWAIT, NULL);
            if (n <= 0) break;
            tx += n;
        }
        for (;;) {
            if (mmsg) {
                for (int i = 0; i < BATCH; i++) msgs[i].msg_hdr.msg_namelen = sizeof froms[i];
                int n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
                if (n <= 0) break;
                uint64_t t = now_ns();
                for (int i = 0; i < n; i++) rtt_sum += t - ((uint64_t *)bufs[i])[1];
                received += n;
                if (n < BATCH) break;
            } else if (stamps) {
                msgs[0].msg_hdr.msg_namelen = sizeof froms[0];
                msgs[0].msg_hdr.msg_control = control[0];
                msgs[0].msg_hdr.msg_controllen = sizeof control[0];
                ssize_t n = recvmsg(fd, &msgs[0].msg_hdr, 0);
                if (n < 16) break;
                uint64_t t = now_ns();
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[0].msg_hdr); c; c = CMSG_NXTHDR(&msgs[0].msg_hdr, c))
                    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPING) rx++;
                rtt_sum += t - ((uint64_t *)bufs[0])[1];
                received++;
            } else {
                socklen_t len = sizeof froms[0];
                ssize_t n = recvfrom(fd, bufs[0], sizeof bufs[0], 0, (struct sockaddr *)&froms[0], &len);
                if (n < 16) break;
                rtt_sum += now_ns() - ((uint64_t *)bufs[0])[1];
                received++;
            }
        }
        now = now_ns();
        uint64_t wake = (p[next].due - start + tick - 1) / tick * tick + start;
        int64_t wait = (int64_t)(wake - now);
        struct timespec ts = {0, 0};
        if (wait > 0) ts = (struct timespec){wait / 1000000000, wait % 1000000000};
        ppoll(&pfd, 1, &ts, NULL);
    }
    printf("sent %lu received %lu mean_rtt_ns %lu rx_stamps %lu tx_stamps %lu\n", sent,
           received, received ? rtt_sum / received : 0, rx, tx);
    return 0;
}
