/* A bare C echo on 127.0.0.1:PORT with the STAMP reflector's socket
 * options (RX software stamps, IP_RECVTTL, IP_RECVTOS; recvmsg with control
 * data), to bound what the kernel lets Follow-Up + CoS cost per answer
 * (benches/stamp_tlv_c_bound.sh). It echoes the bytes, no STAMP work:
 *   MODE 0: sendto, no control message;
 *   MODE 1: sendmsg with IP_TOS + SO_TIMESTAMPING(TX_SOFTWARE), one
 *           recvmmsg(MSG_ERRQUEUE) per answer;
 *   MODE 2: as 1, the error queue read once every EVERY answers;
 *   MODE 3: sendmsg with IP_TOS only;
 *   MODE 4: sendmsg with SO_TIMESTAMPING only, one errqueue read per answer.
 * On SIGINT it prints how many it answered and how many error-queue reads
 * found a stamp.
 *
 *   stamp_echo PORT MODE [EVERY]   (EVERY default 8) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/net_tstamp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
static volatile sig_atomic_t stop;
static void on_int(int s) { (void)s; stop = 1; }
int main(int argc, char **argv) {
    int port = atoi(argv[1]), mode = atoi(argv[2]), every = argc > 3 ? atoi(argv[3]) : 8;
    int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a)) { perror("bind"); return 1; }
    int flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_ID |
                SOF_TIMESTAMPING_OPT_TSONLY | SOF_TIMESTAMPING_OPT_TX_SWHW;
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags);
    setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof one);
    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
    struct sigaction sa = {.sa_handler = on_int};
    sigaction(SIGINT, &sa, NULL);
    char buf[65536], ctl[512] __attribute__((aligned(8))), sctl[64] __attribute__((aligned(8)));
    struct sockaddr_in from;
    struct iovec iov = {.iov_base = buf};
    long long answers = 0, reads = 0;
    struct mmsghdr eq[16];
    char ectl[16][256] __attribute__((aligned(8))), scratch[64];
    struct iovec eiov = {.iov_base = scratch, .iov_len = sizeof scratch};
    while (!stop) {
        iov.iov_len = sizeof buf;
        struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov,
                           .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
        ssize_t n = recvmsg(fd, &m, 0);
        if (n <= 0) continue;
        iov.iov_len = n;
        if (mode == 0) {
            sendto(fd, buf, n, 0, (struct sockaddr *)&from, sizeof from);
        } else {
            struct msghdr s = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov,
                               .msg_iovlen = 1, .msg_control = sctl, .msg_controllen = sizeof sctl};
            struct cmsghdr *c = CMSG_FIRSTHDR(&s);
            int used = 0;
            if (mode != 4) {
                c->cmsg_level = IPPROTO_IP; c->cmsg_type = IP_TOS; c->cmsg_len = CMSG_LEN(sizeof(int));
                *(int *)CMSG_DATA(c) = 0xba;
                used += CMSG_SPACE(sizeof(int));
                c = (struct cmsghdr *)(sctl + used);
            }
            if (mode != 3) {
                c->cmsg_level = SOL_SOCKET; c->cmsg_type = SO_TIMESTAMPING; c->cmsg_len = CMSG_LEN(sizeof(int));
                *(int *)CMSG_DATA(c) = SOF_TIMESTAMPING_TX_SOFTWARE;
                used += CMSG_SPACE(sizeof(int));
            }
            s.msg_controllen = used;
            sendmsg(fd, &s, 0);
            if (mode == 1 || mode == 4 || (mode == 2 && answers % every == 0)) {
                memset(eq, 0, sizeof eq);
                for (int i = 0; i < 16; i++) {
                    eq[i].msg_hdr.msg_iov = &eiov; eq[i].msg_hdr.msg_iovlen = 1;
                    eq[i].msg_hdr.msg_control = ectl[i]; eq[i].msg_hdr.msg_controllen = 256;
                }
                if (recvmmsg(fd, eq, 16, MSG_ERRQUEUE | MSG_DONTWAIT, NULL) > 0) reads++;
            }
        }
        answers++;
    }
    fprintf(stderr, "answers %lld errqueue-reads-with-stamps %lld\n", answers, reads);
    return 0;
}
