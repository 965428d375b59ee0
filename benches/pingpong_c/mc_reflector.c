/* The bare multicast reflector: joins GROUP on the interface of IFADDR,
 * bound to GROUP:PORT, pinned to CPU, and answers each datagram with a
 * blocking recvfrom and one sendto: to its sender's address (TO_GROUP 0,
 * as `synapse server --join` answers), or to the group (TO_GROUP 1, as
 * sockperf's server does: every member gets it, so only one responder
 * makes sense). Runs until killed.
 *
 *   mc_reflector GROUP PORT IFADDR CPU TO_GROUP */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: mc_reflector GROUP PORT IFADDR CPU TO_GROUP\n");
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[4]), &set);
    sched_setaffinity(0, sizeof set, &set);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in group = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    struct ip_mreq join;
    struct in_addr ifaddr;
    if (inet_pton(AF_INET, argv[1], &group.sin_addr) != 1 ||
        inet_pton(AF_INET, argv[3], &ifaddr) != 1) {
        fprintf(stderr, "not an IPv4 address\n");
        return 2;
    }
    if (bind(fd, (struct sockaddr *)&group, sizeof group) < 0) {
        perror("bind");
        return 1;
    }
    join.imr_multiaddr = group.sin_addr;
    join.imr_interface = ifaddr;
    unsigned char off = 0;
    if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &join, sizeof join) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifaddr, sizeof ifaddr) < 0 ||
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &off, sizeof off) < 0) {
        perror("setsockopt");
        return 1;
    }
    int to_group = atoi(argv[5]);
    static char buf[65536];
    for (;;) {
        struct sockaddr_in from;
        socklen_t len = sizeof from;
        ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &len);
        if (n < 0)
            continue;
        if (to_group)
            sendto(fd, buf, n, 0, (struct sockaddr *)&group, sizeof group);
        else
            sendto(fd, buf, n, 0, (struct sockaddr *)&from, len);
    }
}
