/* SPDX-License-Identifier: MIT */
/* Test reference: a process's delay accounting as the kernel's taskstats interface reports it
 * (generic netlink family TASKSTATS, what getdelays(8) reads), independently of trapstatd's BPF.
 * For a thread group (the default) the kernel sums its exited threads (signal->stats) and its live
 * ones; --pid asks for one thread. The kernel counts only while kernel.task_delayacct is 1 (or it
 * was booted with delayacct).
 *
 * usage: taskstats [--pid] ID
 * prints: {"swapinNs": N, "swapinCount": N, "thrashingNs": N, "thrashingCount": N, "reclaimNs": N,
 *          "reclaimCount": N, "compactNs": N, "compactCount": N, "blkioNs": N, "blkioCount": N}
 *   the varlink type Stall's members (schema/io.trapstat.varlink): reclaim is the kernel's
 *   freepages delay; a delay the kernel (or this program's <linux/taskstats.h>) does not have is 0.
 * Errors: one line on stderr; exit 2 for bad usage, 77 where the kernel has no taskstats family
 * (CONFIG_TASKSTATS off), 1 on any other failure (no such process, a refused request). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A reply of either request is a few hundred bytes; the kernel's taskstats grows by version. */
#define BUF_SIZE 16384

static unsigned seq;

/* Request: header, generic netlink header, and one attribute. */
struct request {
        struct nlmsghdr n;
        struct genlmsghdr g;
        char attrs[64];
};

static void add_attr(struct request *r, uint16_t type, const void *data, size_t len) {
        struct nlattr *a = (struct nlattr *) ((char *) r + NLMSG_ALIGN(r->n.nlmsg_len));

        a->nla_type = type;
        a->nla_len = (uint16_t) (NLA_HDRLEN + len);
        memcpy((char *) a + NLA_HDRLEN, data, len);
        r->n.nlmsg_len = NLMSG_ALIGN(r->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* Sends one request to family and reads its reply into buf. Returns the reply's generic netlink
 * payload length (attributes after the genlmsghdr), or a negative errno: the kernel's error for the
 * request, -EBADMSG for a reply that is not one. */
static int transact(int fd, uint16_t family, uint8_t cmd, uint16_t attr, const void *data, size_t len, char *buf,
                    struct nlattr **ret_attrs) {
        struct request r = {
                .n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN),
                .n.nlmsg_type = family,
                .n.nlmsg_flags = NLM_F_REQUEST,
                .n.nlmsg_seq = ++seq,
                .g.cmd = cmd,
                .g.version = 1,
        };
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        ssize_t n;

        add_attr(&r, attr, data, len);
        if (sendto(fd, &r, r.n.nlmsg_len, 0, (struct sockaddr *) &kernel, sizeof(kernel)) < 0)
                return -errno;
        /* Skip anything that is not the reply to this request (none is expected on a fresh socket). */
        for (;;) {
                struct nlmsghdr *h = (struct nlmsghdr *) buf;

                n = recv(fd, buf, BUF_SIZE, 0);
                if (n < 0)
                        return -errno;
                if (!NLMSG_OK(h, (size_t) n))
                        return -EBADMSG;
                if (h->nlmsg_seq != r.n.nlmsg_seq)
                        continue;
                if (h->nlmsg_type == NLMSG_ERROR) {
                        struct nlmsgerr *e = NLMSG_DATA(h);

                        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
                                return -EBADMSG;
                        /* An acknowledgement (error 0) is no reply: the request was not answered. */
                        return e->error < 0 ? e->error : -EBADMSG;
                }
                if (h->nlmsg_type != family || h->nlmsg_len < NLMSG_LENGTH(GENL_HDRLEN))
                        return -EBADMSG;
                *ret_attrs = (struct nlattr *) ((char *) NLMSG_DATA(h) + GENL_HDRLEN);
                return (int) (h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN));
        }
}

/* The attribute of type in the len bytes of attributes at a, or NULL. */
static struct nlattr *find_attr(struct nlattr *a, int len, uint16_t type) {
        while (len >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= len) {
                if ((a->nla_type & NLA_TYPE_MASK) == type)
                        return a;
                len -= NLA_ALIGN(a->nla_len);
                a = (struct nlattr *) ((char *) a + NLA_ALIGN(a->nla_len));
        }
        return NULL;
}

static void *attr_data(struct nlattr *a) {
        return (char *) a + NLA_HDRLEN;
}

static int attr_len(struct nlattr *a) {
        return a->nla_len - NLA_HDRLEN;
}

static int family_id(int fd, char *buf, uint16_t *ret) {
        struct nlattr *attrs, *id;
        int len;

        len = transact(fd, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_NAME, TASKSTATS_GENL_NAME,
                       sizeof(TASKSTATS_GENL_NAME), buf, &attrs);
        if (len < 0)
                return len;
        id = find_attr(attrs, len, CTRL_ATTR_FAMILY_ID);
        if (!id || attr_len(id) < (int) sizeof(uint16_t))
                return -EBADMSG;
        memcpy(ret, attr_data(id), sizeof(*ret));
        return 0;
}

static void print_stall(const struct taskstats *t) {
        uint64_t thrashing_ns = 0, thrashing_count = 0, compact_ns = 0, compact_count = 0;

        /* Headers older than the kernel's version 9 (thrashing) and 11 (compaction) lack these. */
#if TASKSTATS_VERSION >= 9
        thrashing_ns = t->thrashing_delay_total;
        thrashing_count = t->thrashing_count;
#endif
#if TASKSTATS_VERSION >= 11
        compact_ns = t->compact_delay_total;
        compact_count = t->compact_count;
#endif
        printf("{\"swapinNs\": %" PRIu64 ", \"swapinCount\": %" PRIu64 ", \"thrashingNs\": %" PRIu64
               ", \"thrashingCount\": %" PRIu64 ", \"reclaimNs\": %" PRIu64 ", \"reclaimCount\": %" PRIu64
               ", \"compactNs\": %" PRIu64 ", \"compactCount\": %" PRIu64 ", \"blkioNs\": %" PRIu64
               ", \"blkioCount\": %" PRIu64 "}\n",
               (uint64_t) t->swapin_delay_total, (uint64_t) t->swapin_count, thrashing_ns, thrashing_count,
               (uint64_t) t->freepages_delay_total, (uint64_t) t->freepages_count, compact_ns, compact_count,
               (uint64_t) t->blkio_delay_total, (uint64_t) t->blkio_count);
}

/* A pid or tgid: a positive decimal that fits pid_t. */
static int parse_id(const char *s, uint32_t *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v <= 0 || v > INT32_MAX)
                return -EINVAL;
        *ret = (uint32_t) v;
        return 0;
}

static int fail(const char *what, int error, int code) {
        fprintf(stderr, "taskstats: %s: %s\n", what, strerror(-error));
        return code;
}

int main(int argc, char *argv[]) {
        bool thread = argc == 3 && strcmp(argv[1], "--pid") == 0;
        static char buf[BUF_SIZE];
        struct nlattr *attrs, *aggr, *stats;
        struct taskstats t;
        uint16_t family;
        uint32_t id;
        int fd, len, r;

        if (argc != 2 + thread || parse_id(argv[argc - 1], &id) < 0) {
                fprintf(stderr, "usage: taskstats [--pid] ID\n");
                return 2;
        }

        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
        if (fd < 0)
                return fail("generic netlink socket", -errno, 1);
        r = family_id(fd, buf, &family);
        if (r == -ENOENT)
                return fail("no generic netlink family " TASKSTATS_GENL_NAME " (kernel without CONFIG_TASKSTATS)", r,
                            77);
        if (r < 0)
                return fail("resolving the generic netlink family " TASKSTATS_GENL_NAME, r, 1);

        len = transact(fd, family, TASKSTATS_CMD_GET, thread ? TASKSTATS_CMD_ATTR_PID : TASKSTATS_CMD_ATTR_TGID, &id,
                       sizeof(id), buf, &attrs);
        if (len < 0) {
                char what[64];

                /* The kernel answers only callers with CAP_NET_ADMIN. */
                snprintf(what, sizeof(what), "%s %" PRIu32 "%s", thread ? "thread" : "thread group", id,
                         len == -EPERM ? " (needs CAP_NET_ADMIN)" : "");
                return fail(what, len, 1);
        }
        /* The reply nests the id and the stats in an aggregate: AGGR_TGID(TGID, STATS) or AGGR_PID(PID, STATS). */
        aggr = find_attr(attrs, len, thread ? TASKSTATS_TYPE_AGGR_PID : TASKSTATS_TYPE_AGGR_TGID);
        stats = aggr ? find_attr(attr_data(aggr), attr_len(aggr), TASKSTATS_TYPE_STATS) : NULL;
        if (!stats)
                return fail("reply without an aggregate of stats", -EBADMSG, 1);
        /* The kernel's struct is as large as its version: an older kernel's is shorter (its missing
         * delays are 0), a newer one's longer (appended members this header does not know). */
        memset(&t, 0, sizeof(t));
        memcpy(&t, attr_data(stats), (size_t) attr_len(stats) < sizeof(t) ? (size_t) attr_len(stats) : sizeof(t));
        print_stall(&t);
        close(fd);
        return fflush(stdout) == 0 ? 0 : fail("stdout", -errno, 1);
}
