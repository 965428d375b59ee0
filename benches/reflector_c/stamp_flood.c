/* The open-loop flood of flood.c, sending one datagram read from a file
 * (a STAMP test packet, say) instead of zeros: COUNT copies of PAYLOAD
 * from SRC_ADDR (port 0) to 127.0.0.1:PORT at RATE per second,
 * sent with sendmmsg in batches of 64, replies drained (recvmmsg, 64 at a
 * time) and counted. Prints "sent N answered M seconds S", S being the time
 * the sending took (longer than COUNT / RATE when the generator cannot keep
 * up). With SOURCES (default 1), that many sockets take turns, each
 * sending BATCH / SOURCES datagrams per sendmmsg.
 *
 * With GSO 1, each source's turn is one message cut into its datagrams by
 * the kernel (UDP_SEGMENT): the reflector receives the same datagrams,
 * and the generator spends far less of its core sending them, so it can
 * offer more than a batching reflector answers.
 *
 *   stamp_flood SRC_ADDR PORT COUNT RATE PAYLOAD_FILE [SOURCES [GSO]] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <netinet/udp.h>
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define BATCH 64
#define MAX_SOURCES 64

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 6 || argc > 8) {
        fprintf(stderr, "usage: stamp_flood SRC_ADDR PORT COUNT RATE PAYLOAD_FILE [SOURCES [GSO]]\n");
        return 2;
    }
    long long count = atoll(argv[3]), rate = atoll(argv[4]);
    FILE *f = fopen(argv[5], "rb");
    static char payload[65536];
    int size = f ? (int)fread(payload, 1, sizeof payload, f) : -1;
    if (f) fclose(f);
    if (size < 1) {
        fprintf(stderr, "stamp_flood: cannot read %s\n", argv[5]);
        return 2;
    }
    int sources = argc >= 7 ? atoi(argv[6]) : 1;
    int gso = argc == 8 && atoi(argv[7]);
    if (sources < 1 || sources > MAX_SOURCES) {
        fprintf(stderr, "flood: SOURCES must be 1..%d\n", MAX_SOURCES);
        return 2;
    }
    int fds[MAX_SOURCES], big = 8 << 20;
    struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
    inet_pton(AF_INET, argv[1], &src.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    dst.sin_port = htons(atoi(argv[2]));
    for (int s = 0; s < sources; s++) {
        fds[s] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
        if (bind(fds[s], (struct sockaddr *)&src, sizeof src) ||
            connect(fds[s], (struct sockaddr *)&dst, sizeof dst)) {
            perror("flood");
            return 1;
        }
        setsockopt(fds[s], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    }
    char *buf = calloc(BATCH, size), *rx = calloc(BATCH, 2048);
    for (int i = 0; i < BATCH; i++) memcpy(buf + (size_t)i * size, payload, size);
    struct mmsghdr msgs[BATCH], answers[BATCH];
    struct iovec iov = {.iov_base = buf, .iov_len = size}, rx_iov[BATCH];
    memset(msgs, 0, sizeof msgs);
    memset(answers, 0, sizeof answers);
    for (int i = 0; i < BATCH; i++) {
        msgs[i].msg_hdr.msg_iov = &iov;
        msgs[i].msg_hdr.msg_iovlen = 1;
        rx_iov[i].iov_base = rx + i * 2048;
        rx_iov[i].iov_len = 2048;
        answers[i].msg_hdr.msg_iov = &rx_iov[i];
        answers[i].msg_hdr.msg_iovlen = 1;
    }
    /* Each sendmmsg comes from the next source, BATCH / SOURCES at a time,
     * so the reflector sees the sources interleaved. */
    int chunk = BATCH / sources, next = 0;
    /* GSO: one message of up to `chunk` datagrams of SIZE bytes. */
    char control[CMSG_SPACE(sizeof(unsigned short))] __attribute__((aligned(8))) = {0};
    struct iovec whole = {.iov_base = buf};
    struct msghdr one = {.msg_iov = &whole, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    struct cmsghdr *segment = CMSG_FIRSTHDR(&one);
    segment->cmsg_level = SOL_UDP;
    segment->cmsg_type = UDP_SEGMENT;
    segment->cmsg_len = CMSG_LEN(sizeof(unsigned short));
    *(unsigned short *)CMSG_DATA(segment) = size;
    if (gso && (size < 1 || chunk * size > 65000)) {
        fprintf(stderr, "flood: GSO needs 1 <= SIZE and BATCH / SOURCES * SIZE <= 65000\n");
        return 2;
    }
    long long sent = 0, answered = 0, start = now_ns(), got;
#define DRAIN()                                                                   \
    for (int s = 0; s < sources; s++)                                             \
        while ((got = recvmmsg(fds[s], answers, BATCH, 0, NULL)) > 0) answered += got
    while (sent < count) {
        long long due = start + sent * 1000000000LL / rate;
        while (now_ns() < due)
            DRAIN();
        for (int c = 0; c < sources && sent < count; c++) {
            int n = count - sent < chunk ? (int)(count - sent) : chunk;
            int done;
            if (gso) {
                whole.iov_len = (size_t)n * size;
                done = sendmsg(fds[next], &one, 0) > 0 ? n : -1;
            } else {
                done = sendmmsg(fds[next], msgs, n, 0);
            }
            next = (next + 1) % sources;
            sent += done > 0 ? done : 0;
        }
        DRAIN();
    }
    double seconds = (now_ns() - start) / 1e9;
    long long quiet = now_ns() + 200000000LL;
    while (now_ns() < quiet)
        DRAIN();
    printf("sent %lld answered %lld seconds %.3f\n", sent, answered, seconds);
    return 0;
}
