/* A plain UDP echo on COUNT ports of 127.0.0.1 from FIRST_PORT, one
 * thread, epoll: the peers of benches/agent_vs_c.sh. Pinned to CPU; prints
 * "ready" once every port is bound; runs until killed.
 *
 *   echo FIRST_PORT COUNT CPU */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: echo FIRST_PORT COUNT CPU\n");
        return 2;
    }
    int first = atoi(argv[1]), count = atoi(argv[2]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[3]), &set);
    sched_setaffinity(0, sizeof set, &set);
    int ep = epoll_create1(0);
    for (int i = 0; i < count; i++) {
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
        struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(first + i)};
        inet_pton(AF_INET, "127.0.0.1", &at.sin_addr);
        if (bind(fd, (struct sockaddr *)&at, sizeof at)) {
            perror("bind");
            return 1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    }
    printf("ready\n");
    fflush(stdout);
    struct epoll_event ready[256];
    char buf[65536];
    for (;;) {
        int n = epoll_wait(ep, ready, 256, -1);
        for (int i = 0; i < n; i++) {
            struct sockaddr_storage from;
            for (;;) {
                socklen_t len = sizeof from;
                ssize_t got = recvfrom(ready[i].data.fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &len);
                if (got < 0) break;
                sendto(ready[i].data.fd, buf, got, 0, (struct sockaddr *)&from, len);
            }
        }
    }
}
