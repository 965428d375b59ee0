/* The bare TCP echo reflector, pinned to CPU, running until killed; every
 * byte of a connection written back as it came, TCP_NODELAY on each,
 * nothing else.
 *
 * By default one connection at a time, as lean as the kernel allows:
 * a blocking accept, then blocking recv and send on that connection until
 * its client closes it (what sockperf's server does with its one TCP
 * connection: recvfrom, sendto). Serves a ping-pong and a TCP_CRR loop.
 *
 * EPOLL=1: any number of connections at once, one thread, epoll
 * (level-triggered), non-blocking recv and send.
 *
 *   tcp_reflector PORT CPU */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: tcp_reflector PORT CPU\n");
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[2]), &set);
    sched_setaffinity(0, sizeof set, &set);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), on = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &at.sin_addr);
    if (bind(lfd, (struct sockaddr *)&at, sizeof at) || listen(lfd, 4096)) {
        perror("bind/listen");
        return 1;
    }
    char buf[65536];
    if (!(getenv("EPOLL") && atoi(getenv("EPOLL")))) {
        int fl = fcntl(lfd, F_GETFL);
        fcntl(lfd, F_SETFL, fl & ~O_NONBLOCK);
        for (;;) {
            int c = accept(lfd, NULL, NULL);
            if (c < 0) continue;
            setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
            ssize_t got;
            while ((got = recv(c, buf, sizeof buf, 0)) > 0)
                for (ssize_t off = 0, w; off < got; off += w)
                    if ((w = send(c, buf + off, got - off, MSG_NOSIGNAL)) < 0) break;
            close(c);
        }
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd}, evs[64];
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    for (;;) {
        int n = epoll_wait(ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == lfd) {
                int c;
                while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
                    struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
                }
                continue;
            }
            ssize_t got = recv(fd, buf, sizeof buf, 0);
            if (got <= 0) { /* closed, reset, or (never here) nothing */
                close(fd);
                continue;
            }
            /* A request is small: the send buffer takes it whole. */
            for (ssize_t off = 0; off < got;) {
                ssize_t w = send(fd, buf + off, got - off, MSG_NOSIGNAL);
                if (w < 0) break;
                off += w;
            }
        }
    }
}
