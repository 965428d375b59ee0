/* The bare multicast ping-pong client: an unconnected UDP socket (the
 * answer comes from the responder's own address), pinned to CPU, sending
 * SIZE bytes to GROUP:PORT and sleeping in a blocking recvfrom for the
 * first answer; CLOCK_MONOTONIC around each round trip; 2,000 exchanges
 * first. What a multicast round trip to a responder that answers to the
 * sender's address costs with nothing else. Prints "p50 p99" in ns.
 *
 * JOIN=IFADDR: for a reflector that answers to the group, the socket is
 * bound to GROUP:PORT and joins it on the interface of IFADDR, and waits
 * for the answer carrying its own number (its requests do not come back:
 * loopback off).
 *
 *   mc_client GROUP PORT COUNT CPU [SIZE] */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

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
        fprintf(stderr, "usage: mc_client GROUP PORT COUNT CPU [SIZE]\n");
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[4]), &set);
    sched_setaffinity(0, sizeof set, &set);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) {
        fprintf(stderr, "not an IPv4 group: %s\n", argv[1]);
        return 2;
    }
    const char *join = getenv("JOIN");
    if (join) {
        struct ip_mreq m = {.imr_multiaddr = to.sin_addr};
        unsigned char off = 0;
        if (inet_pton(AF_INET, join, &m.imr_interface) != 1 ||
            bind(fd, (struct sockaddr *)&to, sizeof to) < 0 ||
            setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) < 0 ||
            setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &m.imr_interface, sizeof m.imr_interface) < 0 ||
            setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &off, sizeof off) < 0) {
            perror("JOIN");
            return 1;
        }
    }
    long count = atol(argv[3]);
    size_t size = argc == 6 ? (size_t)atol(argv[5]) : 40;
    long long *rtt = malloc(count * sizeof *rtt);
    char buf[65536];
    memset(buf, 0, sizeof buf);
    for (long i = -2000; i < count; i++) {
        memcpy(buf, &i, sizeof i);
        long long t = now_ns();
        if (sendto(fd, buf, size, 0, (struct sockaddr *)&to, sizeof to) < 0) {
            perror("sendto");
            return 1;
        }
        long got;
        do {
            struct sockaddr_in from;
            socklen_t len = sizeof from;
            if (recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &len) < 0) {
                perror("recvfrom");
                return 1;
            }
            memcpy(&got, buf, sizeof got);
        } while (got != i);
        if (i >= 0)
            rtt[i] = now_ns() - t;
    }
    qsort(rtt, count, sizeof *rtt, cmp);
    printf("%lld %lld\n", rtt[count / 2], rtt[count * 99 / 100]);
    return 0;
}
