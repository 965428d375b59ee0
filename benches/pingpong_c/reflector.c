/* The bare reflector: recvfrom(MSG_DONTWAIT) in a spin, sendto of what
 * came back to whoever sent it, nothing else. Pinned to CPU; runs until
 * killed. BLOCK=1: sleeps in a blocking recvfrom instead of spinning.
 *
 *   reflector PORT CPU */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: reflector PORT CPU\n");
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[2]), &set);
    sched_setaffinity(0, sizeof set, &set);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &at.sin_addr);
    if (bind(fd, (struct sockaddr *)&at, sizeof at)) {
        perror("bind");
        return 1;
    }
    int big = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    int wait = getenv("BLOCK") && atoi(getenv("BLOCK")) ? 0 : MSG_DONTWAIT;
    char buf[65536];
    struct sockaddr_storage from;
    for (;;) {
        socklen_t len = sizeof from;
        ssize_t n = recvfrom(fd, buf, sizeof buf, wait, (struct sockaddr *)&from, &len);
        if (n >= 0) sendto(fd, buf, n, 0, (struct sockaddr *)&from, len);
    }
}
