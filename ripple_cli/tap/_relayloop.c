/* The tap relay's event loop in C: the same relay as relay.py's asyncio
 * one (records, closing rules, bounds), without the interpreter in the path
 * of every forwarded chunk.
 *
 * Why C: forwarding is the one thing the tap must never slow down, and a
 * Python event loop costs tens of microseconds per hop and a core's worth
 * of CPU at loopback speeds, on the same 2 cores the tap decodes on.
 *
 * Why the copies are flushed to the tap in blocks: a pipe write per
 * forwarded chunk would wake the tap for every small message; copies wait
 * in `out` until FLUSH_AT bytes or `flush_ms` have passed.  They never wait
 * for the tap: past `limit` bytes a copy is dropped and the tap told a GAP.
 *
 *     run(listen_fds, upstreams, upstream_text, resolve_error, out_fd, in_fd,
 *         max_connections, limit, flush_ms) -> 0
 *
 * listen_fds: listening sockets (Python bound them and told the tap);
 * upstreams: [(family, host, port, flowinfo, scope_id)], tried in order;
 * resolve_error: why `upstreams` is empty.  The loop runs without the GIL
 * until in_fd gives STOP_BYTE then its end (the tap stops us).  Any other
 * end of in_fd or out_fd means the tap is gone: orphaned, the loop stops
 * listening and copying and runs until the open connections are done.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* records.py: u8 type, u32 conn, u8 c2s, i64 time_ns, u32 length; little-endian */
enum { REC_OPEN = 3, REC_DATA = 4, REC_GAP = 5, REC_END = 6, REC_NOTE = 7, REC_STOPPED = 8 };
#define HEADER_SIZE 18

#define READ_SIZE (256 * 1024)
#define WRITE_HIGH_WATER (1 << 20) /* per socket: stop reading the other side past this */
#define WRITE_LOW_WATER (WRITE_HIGH_WATER / 4)
#define FLUSH_AT (64 * 1024)
#define STOP_BYTE 'S' /* relay.py's STOP_BYTE */
#define STOP_GRACE_MS 2000 /* for open connections to flush and close when the tap stops */
#define DRAIN_WAIT_MS 5000 /* for the tap to take the last records */
#define MAX_EVENTS 256
#define TEXT_SIZE (INET6_ADDRSTRLEN + IF_NAMESIZE + 16)

typedef struct {
    char *data;
    size_t head, len, cap; /* the bytes are data[head, head + len) */
} Buf;

static int buf_reserve(Buf *b, size_t more) {
    if (b->head + b->len + more <= b->cap)
        return 0;
    if (b->head > 0) { /* slide down before growing */
        memmove(b->data, b->data + b->head, b->len);
        b->head = 0;
        if (b->len + more <= b->cap)
            return 0;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (p == NULL)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static int buf_append(Buf *b, const void *p, size_t n) {
    if (buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->head + b->len, p, n);
    b->len += n;
    return 0;
}

static void buf_consume(Buf *b, size_t n) {
    b->head += n;
    b->len -= n;
    if (b->len == 0)
        b->head = 0;
}

static void buf_free(Buf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* The records waiting for the tap: a ring.  A Buf slides its bytes down
 * when an append meets its end, and behind a slow tap this one holds up to
 * --buffer (64 MiB): one record's append then copied all of it, holding up
 * the forwarding for milliseconds.  A ring never moves what it holds; it
 * grows (doubling, its bytes copied once) only while the backlog does. */
typedef struct {
    char *data;
    size_t head, len, cap; /* the bytes are data[head, head + len), wrapping at cap */
    int mapped;            /* data is ring_map's (munmap), else malloc's */
} Ring;

/* `cap` bytes of address space for a ring, its pages coming as they are
 * first written; NULL when the mapping cannot be had (a strict overcommit
 * policy).  Why: a fresh tap's first burst grew its ring by doubling, each
 * time copying all it held while the next chunk waited to be forwarded.
 * Measured (a 127 MB burst through a fresh tap, six runs each, 2 cores):
 * the relay forwarded 660-900 MB/s growing its ring, 800-1,170 with it
 * reserved.  Not MADV_HUGEPAGE: 620-1,390 MB/s, the 2 MiB pages zeroed
 * while forwarding waited. */
static char *ring_map(size_t cap) {
    char *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* The ring reserved whole for `bytes` (the copies' limit and a record past
 * it), when the address space can be had; else it grows as it fills. */
static void ring_init(Ring *b, size_t bytes) {
    char *p = ring_map(bytes);
    if (p != NULL) {
        b->data = p;
        b->cap = bytes;
        b->mapped = 1;
    }
}

static void ring_release(Ring *b) {
    if (b->mapped)
        munmap(b->data, b->cap);
    else
        free(b->data);
}

/* The bytes held, as one or two spans (iov[1] empty when they do not wrap). */
static int ring_spans(const Ring *b, struct iovec iov[2]) {
    size_t first = b->cap - b->head < b->len ? b->cap - b->head : b->len;
    iov[0].iov_base = b->data + b->head;
    iov[0].iov_len = first;
    iov[1].iov_base = b->data;
    iov[1].iov_len = b->len - first;
    return b->len > first ? 2 : 1;
}

static int ring_reserve(Ring *b, size_t more) {
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < b->len + more)
        cap *= 2;
    char *p = malloc(cap);
    if (p == NULL)
        return -1;
    if (b->len > 0) {
        struct iovec iov[2];
        ring_spans(b, iov);
        memcpy(p, iov[0].iov_base, iov[0].iov_len);
        memcpy(p + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
    }
    ring_release(b);
    b->data = p;
    b->cap = cap;
    b->mapped = 0;
    b->head = 0;
    return 0;
}

/* Appends n bytes, room for which ring_reserve made. */
static void ring_put(Ring *b, const void *src, size_t n) {
    if (n == 0)
        return;
    size_t tail = b->head + b->len;
    if (tail >= b->cap)
        tail -= b->cap;
    size_t first = b->cap - tail < n ? b->cap - tail : n;
    memcpy(b->data + tail, src, first);
    memcpy(b->data, (const char *)src + first, n - first);
    b->len += n;
}

static void ring_consume(Ring *b, size_t n) {
    b->len -= n;
    b->head = b->len == 0 ? 0 : (b->head + n) % b->cap;
}

static void ring_free(Ring *b) {
    ring_release(b);
    memset(b, 0, sizeof *b);
}

enum Kind { K_LISTEN, K_SIDE, K_IN, K_OUT };

typedef struct {
    enum Kind kind; /* first member: epoll's data.ptr points at a Handle */
    int fd;
} Handle;

struct Conn;

typedef struct Side {
    Handle h;
    struct Conn *conn;
    int from_client;
    int reading;     /* wants EPOLLIN */
    int paused;      /* not reading because the other side's socket is full */
    int eof;         /* FIN received */
    int shut_wanted; /* send a FIN once `pend` is written */
    uint32_t events; /* what is asked of epoll */
    int registered;  /* in the epoll set (a half-closed side may be, asking nothing) */
    Buf pend;        /* bytes waiting to be written to this socket */
    int gap_held;    /* copies of what this side sent, dropped and not yet told */
    uint64_t gap_bytes;
    int64_t gap_t0;
} Side;

typedef struct Conn {
    struct Conn *prev, *next;
    uint32_t number; /* 0 until the upstream answers */
    int connecting, closing, dead;
    int ended[2]; /* by direction: [1] client -> upstream */
    size_t next_addr;
    int last_errno;
    Side client, upstream;
    char client_text[TEXT_SIZE];
} Conn;

typedef struct {
    struct sockaddr_storage sa;
    socklen_t len;
} Addr;

typedef struct {
    int ep;
    Handle *listens;
    size_t nlisten;
    Handle in, out;
    Addr *ups;
    size_t nups;
    const char *upstream_text, *resolve_error;
    size_t max_conns, nconns;
    uint32_t count;
    Conn *live, *dead;
    Ring obuf;            /* records waiting for the tap */
    size_t limit;         /* bytes of copies in obuf before copies are dropped */
    uint32_t out_events;  /* out's registration */
    int out_dead;         /* the tap is gone */
    int64_t flush_at;     /* monotonic ns when obuf is flushed anyway; 0: nothing waits */
    int64_t flush_ns;
    int64_t accept_retry_at; /* out of descriptors: accepting resumes then; 0: accepting */
    int stop_requested, stopping;
    int stop_asked; /* STOP_BYTE came on in_fd: its end is a stop, not the tap's death */
    int orphaned;   /* the tap is gone without asking: forward what is open, then end */
    int64_t grace_until;
    char *rbuf;
} Relay;

static int64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t wall_ns(void) { return clock_ns(CLOCK_REALTIME); }
static int64_t mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* -- records to the tap --------------------------------------------------- */

static void put_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void record(Relay *r, int type, uint32_t conn, int c2s, int64_t t, const void *payload, size_t n) {
    if (r->out_dead)
        return;
    unsigned char head[HEADER_SIZE];
    head[0] = (unsigned char)type;
    put_le(head + 1, conn, 4);
    head[5] = (unsigned char)(c2s != 0);
    put_le(head + 6, (uint64_t)t, 8);
    put_le(head + 14, n, 4);
    if (ring_reserve(&r->obuf, HEADER_SIZE + n) < 0)
        return; /* out of memory: the record is lost, never the traffic */
    ring_put(&r->obuf, head, HEADER_SIZE);
    ring_put(&r->obuf, payload, n);
    if (r->flush_at == 0)
        r->flush_at = mono_ns() + r->flush_ns;
}

static size_t json_string(char *out, size_t cap, const char *s) {
    size_t k = 0;
    if (k < cap)
        out[k++] = '"';
    for (; *s && k + 7 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            out[k++] = '\\';
            out[k++] = (char)ch;
        } else if (ch < 0x20) {
            k += (size_t)snprintf(out + k, cap - k, "\\u%04x", ch);
        } else {
            out[k++] = (char)ch;
        }
    }
    if (k < cap)
        out[k++] = '"';
    return k;
}

static void note(Relay *r, const char *kind, const char *detail) {
    char text[2048];
    size_t k = (size_t)snprintf(text, sizeof text, "{\"kind\": ");
    k += json_string(text + k, sizeof text - k, kind);
    k += (size_t)snprintf(text + k, sizeof text - k, ", \"detail\": ");
    k += json_string(text + k, sizeof text - k, detail);
    k += (size_t)snprintf(text + k, sizeof text - k, ", \"error\": false}");
    record(r, REC_NOTE, 0, 0, wall_ns(), text, k < sizeof text ? k : sizeof text - 1);
}

static void flush_gap(Relay *r, Side *s) {
    if (!s->gap_held)
        return;
    unsigned char size[8];
    put_le(size, s->gap_bytes, 8);
    s->gap_held = 0;
    record(r, REC_GAP, s->conn->number, s->from_client, s->gap_t0, size, 8);
}

/* A copy of what `s` sent: dropped (and counted for a GAP) when the tap is
 * `limit` bytes behind, as relay.py's Sink.data. */
static void copy(Relay *r, Side *s, int64_t t, const char *data, size_t n) {
    if (r->out_dead)
        return;
    if (r->obuf.len + n > r->limit) {
        if (!s->gap_held) {
            s->gap_held = 1;
            s->gap_bytes = 0;
            s->gap_t0 = t;
        }
        s->gap_bytes += n;
        return;
    }
    flush_gap(r, s);
    record(r, REC_DATA, s->conn->number, s->from_client, t, data, n);
}

static void end(Relay *r, Conn *c, int c2s, const char *reason) {
    if (c->number == 0 || c->ended[c2s])
        return;
    c->ended[c2s] = 1;
    flush_gap(r, c2s ? &c->client : &c->upstream);
    record(r, REC_END, c->number, c2s, wall_ns(), reason, strlen(reason));
}

static void out_register(Relay *r, uint32_t events) {
    if (r->out_dead || r->out_events == events)
        return;
    struct epoll_event ev = {.events = events, .data.ptr = &r->out};
    epoll_ctl(r->ep, EPOLL_CTL_MOD, r->out.fd, &ev);
    r->out_events = events;
}

static void out_flush(Relay *r) {
    while (r->obuf.len > 0 && !r->out_dead) {
        struct iovec iov[2];
        int k = ring_spans(&r->obuf, iov);
        ssize_t n = writev(r->out.fd, iov, k);
        if (n > 0) {
            ring_consume(&r->obuf, (size_t)n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            out_register(r, EPOLLOUT); /* the pipe is full: wait, never block */
            return;
        } else {
            r->out_dead = 1; /* the tap is gone: orphaned */
            r->orphaned = 1;
        }
    }
    r->flush_at = 0;
    out_register(r, 0); /* still reports EPOLLERR: the tap closed its end */
}

/* -- sockets ----------------------------------------------------------------- */

static void addr_text(const struct sockaddr_storage *ss, char *out, size_t cap, char *host, size_t hcap, int *port) {
    host[0] = 0;
    *port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &a->sin_addr, host, (socklen_t)hcap);
        *port = ntohs(a->sin_port);
        snprintf(out, cap, "%s:%d", host, *port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, (socklen_t)hcap);
        char ifname[IF_NAMESIZE];
        if (a->sin6_scope_id && if_indextoname(a->sin6_scope_id, ifname) != NULL) {
            size_t k = strlen(host); /* as Python shows a scoped address: fe80::1%eth0 */
            snprintf(host + k, hcap - k, "%%%s", ifname);
        }
        *port = ntohs(a->sin6_port);
        snprintf(out, cap, "[%s]:%d", host, *port);
    } else {
        snprintf(out, cap, "?");
    }
}

static void side_register(Relay *r, Side *s) {
    if (s->h.fd < 0)
        return;
    uint32_t want = (s->reading ? EPOLLIN : 0) | (s->pend.len > 0 ? EPOLLOUT : 0);
    if (s->conn->connecting && s == &s->conn->upstream)
        want = EPOLLOUT;
    /* Unregistered when nothing is wanted: a hung-up socket would otherwise
     * report EPOLLHUP over and over while its reading is paused.  A side
     * whose FIN came stays registered, asking nothing: epoll still reports
     * its reset (EPOLLERR), which must reach the other side at once, and it
     * reports no hang-up before its connection closes (its other half is
     * shut only when the other side's FIN is passed on, and then both have
     * ended). */
    int keep = want != 0 || (s->eof && !s->conn->closing);
    if (want == s->events && keep == s->registered)
        return;
    struct epoll_event ev = {.events = want, .data.ptr = &s->h};
    if (!keep)
        epoll_ctl(r->ep, EPOLL_CTL_DEL, s->h.fd, NULL);
    else
        epoll_ctl(r->ep, s->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->h.fd, &ev);
    s->events = want;
    s->registered = keep;
}

static void side_close(Relay *r, Side *s, int reset) {
    if (s->h.fd < 0)
        return;
    if (s->registered)
        epoll_ctl(r->ep, EPOLL_CTL_DEL, s->h.fd, NULL);
    s->events = 0;
    s->registered = 0;
    if (reset) { /* SO_LINGER 0: close sends a RST */
        struct linger l = {1, 0};
        setsockopt(s->h.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    close(s->h.fd);
    s->h.fd = -1;
    s->reading = 0;
    buf_free(&s->pend);
}

/* Off the live list once both sockets are closed; freed after the batch of
 * events that may still point at it. */
static void conn_reap(Relay *r, Conn *c) {
    if (c->dead || c->client.h.fd >= 0 || c->upstream.h.fd >= 0)
        return;
    c->dead = 1;
    if (c->prev)
        c->prev->next = c->next;
    else
        r->live = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = r->dead;
    r->dead = c;
    r->nconns--;
}

static void set_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Both directions done: close each socket once what is
 * buffered for it is written. */
static void conn_close(Relay *r, Conn *c) {
    c->closing = 1;
    Side *sides[2] = {&c->client, &c->upstream};
    for (int i = 0; i < 2; i++) {
        Side *s = sides[i];
        s->reading = 0;
        if (s->pend.len == 0)
            side_close(r, s, 0);
        else
            side_register(r, s);
    }
    conn_reap(r, c);
}

/* The tap stops: a direction still open is cut, and its receiver is reset
 * (what waits for it is dropped), so that no peer takes the cut for the
 * other's end of stream; a direction already ended by a FIN has what waits
 * for it written (within the grace) before its socket closes. */
static void conn_cut(Relay *r, Conn *c) {
    c->closing = 1;
    end(r, c, 1, "tap stopped");
    end(r, c, 0, "tap stopped");
    Side *sides[2] = {&c->client, &c->upstream};
    for (int i = 0; i < 2; i++) {
        Side *s = sides[i], *from = sides[1 - i];
        s->reading = 0;
        if (!from->eof)
            side_close(r, s, 1);
        else if (s->pend.len == 0)
            side_close(r, s, 0);
        else
            side_register(r, s);
    }
    conn_reap(r, c);
}

/* A reset or an error on `s` before both directions ended: both end, the
 * failed side first, and the other side is reset. */
static void side_failed(Relay *r, Side *s, int err) {
    Conn *c = s->conn;
    Side *peer = s->from_client ? &c->upstream : &c->client;
    if (c->closing) {
        side_close(r, s, 0);
        conn_reap(r, c);
        return;
    }
    c->closing = 1;
    char reason[256];
    if (err == 0 || err == ECONNRESET)
        snprintf(reason, sizeof reason, "rst");
    else
        snprintf(reason, sizeof reason, "error: %s", strerror(err));
    end(r, c, s->from_client, reason);
    end(r, c, !s->from_client, reason);
    side_close(r, s, 0);
    side_close(r, peer, 1);
    conn_reap(r, c);
}

static void try_shutdown(Side *s) {
    if (s->shut_wanted && s->pend.len == 0 && s->h.fd >= 0) {
        shutdown(s->h.fd, SHUT_WR);
        s->shut_wanted = 0;
    }
}

/* Writes what waits for `s`; returns -1 when `s` failed (and is closed). */
static int side_write(Relay *r, Side *s) {
    Conn *c = s->conn;
    Side *peer = s->from_client ? &c->upstream : &c->client;
    while (s->pend.len > 0) {
        ssize_t n = send(s->h.fd, s->pend.data + s->pend.head, s->pend.len, MSG_NOSIGNAL);
        if (n > 0) {
            buf_consume(&s->pend, (size_t)n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            break;
        } else {
            side_failed(r, s, n < 0 ? errno : 0);
            return -1;
        }
    }
    if (s->pend.len == 0) {
        buf_free(&s->pend); /* a connection that moved a burst does not keep its memory */
        if (c->closing) {
            side_close(r, s, 0);
            conn_reap(r, c);
            return 0;
        }
        try_shutdown(s);
    }
    if (peer->paused && s->pend.len <= WRITE_LOW_WATER) {
        peer->paused = 0;
        peer->reading = !peer->eof && !c->closing;
        side_register(r, peer);
    }
    side_register(r, s);
    return 0;
}

static void side_read(Relay *r, Side *s) {
    Conn *c = s->conn;
    Side *peer = s->from_client ? &c->upstream : &c->client;
    ssize_t n = recv(s->h.fd, r->rbuf, READ_SIZE, 0);
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR)
            side_failed(r, s, errno);
        return;
    }
    if (n == 0) { /* FIN: passed on once what is buffered for the other side is sent */
        s->eof = 1;
        s->reading = 0;
        side_register(r, s);
        peer->shut_wanted = 1;
        try_shutdown(peer);
        end(r, c, s->from_client, "fin");
        if (c->client.eof && c->upstream.eof)
            conn_close(r, c);
        return;
    }
    if (peer->h.fd < 0 || c->closing)
        return; /* the other side is going: nothing to forward to */
    int64_t t = wall_ns();
    /* Forwarded first, then copied. */
    int failed = 0;
    if (peer->pend.len == 0) {
        ssize_t w;
        do
            w = send(peer->h.fd, r->rbuf, (size_t)n, MSG_NOSIGNAL);
        while (w < 0 && errno == EINTR);
        if (w < 0 && errno != EAGAIN) {
            failed = errno;
        } else {
            size_t sent = w < 0 ? 0 : (size_t)w;
            if (sent < (size_t)n && buf_append(&peer->pend, r->rbuf + sent, (size_t)n - sent) < 0)
                failed = ENOMEM;
        }
    } else if (buf_append(&peer->pend, r->rbuf, (size_t)n) < 0) {
        failed = ENOMEM;
    }
    copy(r, s, t, r->rbuf, (size_t)n);
    if (failed) {
        side_failed(r, peer, failed);
        return;
    }
    if (peer->pend.len > WRITE_HIGH_WATER) {
        s->reading = 0;
        s->paused = 1;
        side_register(r, s);
    }
    side_register(r, peer);
}

/* -- connections --------------------------------------------------------------- */

static void upstream_connected(Relay *r, Conn *c) {
    c->connecting = 0;
    c->number = ++r->count;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char text[TEXT_SIZE], chost[TEXT_SIZE], shost[TEXT_SIZE];
    int cport = 0, sport = 0;
    len = sizeof ss;
    if (getpeername(c->client.h.fd, (struct sockaddr *)&ss, &len) == 0)
        addr_text(&ss, text, sizeof text, chost, sizeof chost, &cport);
    else
        chost[0] = 0;
    len = sizeof ss;
    if (getpeername(c->upstream.h.fd, (struct sockaddr *)&ss, &len) == 0)
        addr_text(&ss, text, sizeof text, shost, sizeof shost, &sport);
    else
        shost[0] = 0;
    char json[4 * TEXT_SIZE];
    size_t k = (size_t)snprintf(json, sizeof json, "{\"client\": [");
    k += json_string(json + k, sizeof json - k, chost);
    k += (size_t)snprintf(json + k, sizeof json - k, ", %d], \"server\": [", cport);
    k += json_string(json + k, sizeof json - k, shost);
    k += (size_t)snprintf(json + k, sizeof json - k, ", %d]}", sport);
    record(r, REC_OPEN, c->number, 0, wall_ns(), json, k);
    c->client.reading = 1;
    c->upstream.reading = 1;
    side_register(r, &c->client);
    side_register(r, &c->upstream);
}

static void upstream_unreachable(Relay *r, Conn *c) {
    char detail[1024];
    if (r->nups > 0 && (c->last_errno == EMFILE || c->last_errno == ENFILE)) {
        /* The tap's limit, not the upstream's fault: say which. */
        snprintf(detail, sizeof detail, "connection from %s closed: no descriptor left to dial upstream %s: %s (ulimit -n)",
                 c->client_text, r->upstream_text, strerror(c->last_errno));
        note(r, "fd_limit", detail);
    } else {
        const char *why = r->nups == 0 ? r->resolve_error : strerror(c->last_errno);
        snprintf(detail, sizeof detail, "connection from %s closed: upstream %s unreachable: %s", c->client_text,
                 r->upstream_text, why);
        note(r, "upstream_unreachable", detail);
    }
    c->connecting = 0;
    c->closing = 1;
    side_close(r, &c->upstream, 0);
    side_close(r, &c->client, 1);
    conn_reap(r, c);
}

/* Dials the next upstream address; all failed: the client is reset. */
static void connect_next(Relay *r, Conn *c) {
    while (c->next_addr < r->nups) {
        Addr *a = &r->ups[c->next_addr++];
        int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            c->last_errno = errno;
            continue;
        }
        set_nodelay(fd);
        c->upstream.h.fd = fd;
        c->upstream.events = 0;
        if (connect(fd, (struct sockaddr *)&a->sa, a->len) == 0) {
            upstream_connected(r, c);
            return;
        }
        if (errno == EINPROGRESS) {
            side_register(r, &c->upstream);
            return;
        }
        c->last_errno = errno;
        side_close(r, &c->upstream, 0);
    }
    upstream_unreachable(r, c);
}

static void connect_done(Relay *r, Conn *c) {
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->upstream.h.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err == 0) {
        upstream_connected(r, c);
        return;
    }
    c->last_errno = err;
    side_close(r, &c->upstream, 0);
    connect_next(r, c);
}

static void side_init(Side *s, Conn *c, int from_client, int fd) {
    s->h.kind = K_SIDE;
    s->h.fd = fd;
    s->conn = c;
    s->from_client = from_client;
}

static void accept_pause(Relay *r) {
    for (size_t i = 0; i < r->nlisten; i++)
        if (r->listens[i].fd >= 0)
            epoll_ctl(r->ep, EPOLL_CTL_DEL, r->listens[i].fd, NULL);
    r->accept_retry_at = mono_ns() + 1000000000;
}

static void accept_resume(Relay *r) {
    r->accept_retry_at = 0;
    for (size_t i = 0; i < r->nlisten; i++) {
        if (r->listens[i].fd >= 0) {
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &r->listens[i]};
            epoll_ctl(r->ep, EPOLL_CTL_ADD, r->listens[i].fd, &ev);
        }
    }
}

static void accept_all(Relay *r, Handle *l) {
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = accept4(l->fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                accept_pause(r); /* as asyncio: the backlog waits a second, no busy loop */
            return;
        }
        char text[TEXT_SIZE], host[TEXT_SIZE];
        int port;
        addr_text(&ss, text, sizeof text, host, sizeof host, &port);
        if (r->nconns >= r->max_conns) {
            close(fd);
            char detail[512];
            snprintf(detail, sizeof detail,
                     "connection from %s refused: %zu connections open (--max-connections)", text, r->max_conns);
            note(r, "refused", detail);
            continue;
        }
        Conn *c = calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        set_nodelay(fd);
        side_init(&c->client, c, 1, fd);
        side_init(&c->upstream, c, 0, -1);
        c->connecting = 1;
        snprintf(c->client_text, sizeof c->client_text, "%s", text);
        c->next = r->live;
        if (r->live)
            r->live->prev = c;
        r->live = c;
        r->nconns++;
        connect_next(r, c); /* the client is read once the upstream answers */
    }
}

static void on_side(Relay *r, Side *s, uint32_t events) {
    Conn *c = s->conn;
    if (c->dead || s->h.fd < 0)
        return;
    if (c->connecting) {
        if (s == &c->upstream)
            connect_done(r, c);
        return;
    }
    if ((events & (EPOLLERR | EPOLLHUP)) && !s->reading && s->pend.len == 0) {
        /* A side that sent its FIN, reset since (or failed): nothing will be
         * written or read to show it, so it is taken here. */
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(s->h.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err == EPIPE) /* a reset in CLOSE_WAIT: the kernel's word for it */
            err = ECONNRESET;
        side_failed(r, s, err);
        return;
    }
    /* A hang-up or an error shows on the next write or read, which closes. */
    if ((events & EPOLLOUT) || ((events & (EPOLLERR | EPOLLHUP)) && !s->reading))
        if (side_write(r, s) < 0 || s->h.fd < 0)
            return;
    if (s->reading && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        side_read(r, s);
}

/* -- the loop ---------------------------------------------------------------------- */

static void begin_stop(Relay *r) {
    r->stopping = 1;
    r->accept_retry_at = 0;
    r->grace_until = mono_ns() + (int64_t)STOP_GRACE_MS * 1000000;
    for (size_t i = 0; i < r->nlisten; i++) {
        if (r->listens[i].fd >= 0) {
            epoll_ctl(r->ep, EPOLL_CTL_DEL, r->listens[i].fd, NULL);
            close(r->listens[i].fd);
            r->listens[i].fd = -1;
        }
    }
    for (Conn *c = r->live, *next; c != NULL; c = next) {
        next = c->next;
        if (c->connecting) {
            c->connecting = 0;
            side_close(r, &c->upstream, 0);
            side_close(r, &c->client, 0);
            conn_reap(r, c);
        } else {
            conn_cut(r, c);
        }
    }
}

/* The tap went away without asking us to stop (killed, or its decoder
 * failed): no new connections, no copies; the open ones are forwarded to
 * their end, so that the tap's failure never costs the traffic. */
static void begin_orphan(Relay *r) {
    r->orphaned = 2;
    r->out_dead = 1;
    r->obuf.head = r->obuf.len = 0;
    r->flush_at = 0;
    epoll_ctl(r->ep, EPOLL_CTL_DEL, r->out.fd, NULL); /* the run's end closes it */
    r->accept_retry_at = 0;
    for (size_t i = 0; i < r->nlisten; i++) {
        if (r->listens[i].fd >= 0) {
            epoll_ctl(r->ep, EPOLL_CTL_DEL, r->listens[i].fd, NULL);
            close(r->listens[i].fd);
            r->listens[i].fd = -1;
        }
    }
}

static void free_dead(Relay *r) {
    while (r->dead != NULL) {
        Conn *c = r->dead;
        r->dead = c->next;
        buf_free(&c->client.pend);
        buf_free(&c->upstream.pend);
        free(c);
    }
}

static int out_waiting(Relay *r) { return (r->out_events & EPOLLOUT) != 0; }

static int timeout_ms(Relay *r) {
    int64_t now = mono_ns(), until = -1;
    if (r->flush_at && !out_waiting(r)) /* a full pipe: its EPOLLOUT, not the clock, says when */
        until = r->flush_at;
    if (r->stopping && (until < 0 || r->grace_until < until))
        until = r->grace_until;
    if (r->accept_retry_at && (until < 0 || r->accept_retry_at < until))
        until = r->accept_retry_at;
    if (until < 0)
        return -1;
    if (until <= now)
        return 0;
    return (int)((until - now + 999999) / 1000000);
}

/* The last records: written with a deadline, the tap may be slow to take them. */
static void drain(Relay *r) {
    int64_t until = mono_ns() + (int64_t)DRAIN_WAIT_MS * 1000000;
    while (r->obuf.len > 0 && !r->out_dead) {
        out_flush(r);
        if (r->obuf.len == 0 || r->out_dead)
            break;
        int64_t now = mono_ns();
        if (now >= until)
            break;
        struct pollfd p = {.fd = r->out.fd, .events = POLLOUT};
        if (poll(&p, 1, (int)((until - now) / 1000000) + 1) > 0 && (p.revents & (POLLERR | POLLHUP)))
            break;
    }
}

static int relay_loop(Relay *r) {
    struct epoll_event evs[MAX_EVENTS];
    for (;;) {
        if (r->orphaned == 1 && !r->stopping)
            begin_orphan(r);
        if (r->orphaned && !r->stopping && r->live == NULL)
            break;
        if (r->stop_requested && !r->stopping)
            begin_stop(r);
        if (r->stopping && (r->live == NULL || mono_ns() >= r->grace_until))
            break;
        int n = epoll_wait(r->ep, evs, MAX_EVENTS, timeout_ms(r));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        for (int i = 0; i < n; i++) {
            Handle *h = evs[i].data.ptr;
            uint32_t e = evs[i].events;
            switch (h->kind) {
            case K_LISTEN:
                if (h->fd >= 0)
                    accept_all(r, h);
                break;
            case K_SIDE:
                on_side(r, (Side *)h, e);
                break;
            case K_IN: {
                char tmp[256];
                ssize_t k = read(h->fd, tmp, sizeof tmp);
                if (k > 0 && memchr(tmp, STOP_BYTE, (size_t)k) != NULL)
                    r->stop_asked = 1;
                if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
                    if (r->stop_asked)
                        r->stop_requested = 1; /* the tap asked, then closed our stdin: stop */
                    else if (!r->orphaned)
                        r->orphaned = 1;
                    epoll_ctl(r->ep, EPOLL_CTL_DEL, h->fd, NULL);
                }
                break;
            }
            case K_OUT:
                if (e & EPOLLERR) { /* the tap closed its end */
                    r->out_dead = 1;
                    if (!r->stop_asked && !r->orphaned)
                        r->orphaned = 1;
                    epoll_ctl(r->ep, EPOLL_CTL_DEL, h->fd, NULL);
                } else if (e & EPOLLOUT) {
                    out_flush(r);
                }
                break;
            }
        }
        free_dead(r);
        if (r->accept_retry_at && mono_ns() >= r->accept_retry_at)
            accept_resume(r);
        if (r->obuf.len > 0 && !out_waiting(r) && (r->obuf.len >= FLUSH_AT || mono_ns() >= r->flush_at))
            out_flush(r);
    }
    for (Conn *c = r->live, *next; c != NULL; c = next) { /* past the grace: whatever is left */
        next = c->next;
        side_close(r, &c->client, 0);
        side_close(r, &c->upstream, 0);
        conn_reap(r, c);
    }
    free_dead(r);
    record(r, REC_STOPPED, 0, 0, wall_ns(), NULL, 0);
    drain(r);
    return 0;
}

static int set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static int add_handle(Relay *r, Handle *h, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.ptr = h};
    return epoll_ctl(r->ep, EPOLL_CTL_ADD, h->fd, &ev);
}

static int parse_upstream(PyObject *item, Addr *a) {
    int family, port;
    const char *host;
    unsigned int flowinfo, scope;
    if (!PyArg_ParseTuple(item, "isiII", &family, &host, &port, &flowinfo, &scope))
        return -1;
    memset(a, 0, sizeof *a);
    if (family == AF_INET) {
        struct sockaddr_in *s = (struct sockaddr_in *)&a->sa;
        s->sin_family = AF_INET;
        s->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &s->sin_addr) != 1)
            goto bad;
        a->len = sizeof *s;
    } else if (family == AF_INET6) {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&a->sa;
        s->sin6_family = AF_INET6;
        s->sin6_port = htons((uint16_t)port);
        s->sin6_flowinfo = htonl(flowinfo);
        s->sin6_scope_id = scope;
        char plain[INET6_ADDRSTRLEN];
        snprintf(plain, sizeof plain, "%s", host);
        char *pct = strchr(plain, '%'); /* a scoped address: the scope is in scope_id */
        if (pct)
            *pct = 0;
        if (inet_pton(AF_INET6, plain, &s->sin6_addr) != 1)
            goto bad;
        a->len = sizeof *s;
    } else {
        goto bad;
    }
    return 0;
bad:
    PyErr_Format(PyExc_ValueError, "not an upstream address: %s", host);
    return -1;
}

static PyObject *run(PyObject *self, PyObject *args) {
    PyObject *listen_fds, *upstreams;
    const char *upstream_text, *resolve_error;
    int out_fd, in_fd, flush_ms;
    Py_ssize_t max_conns, limit;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOssiinni", &listen_fds, &upstreams, &upstream_text, &resolve_error, &out_fd,
                          &in_fd, &max_conns, &limit, &flush_ms))
        return NULL;
    PyObject *fds = PySequence_Fast(listen_fds, "listen_fds must be a sequence");
    if (fds == NULL)
        return NULL;
    PyObject *ups = PySequence_Fast(upstreams, "upstreams must be a sequence");
    if (ups == NULL) {
        Py_DECREF(fds);
        return NULL;
    }
    Relay r;
    memset(&r, 0, sizeof r);
    r.ep = -1;
    r.nlisten = (size_t)PySequence_Fast_GET_SIZE(fds);
    r.nups = (size_t)PySequence_Fast_GET_SIZE(ups);
    r.listens = calloc(r.nlisten + 1, sizeof *r.listens);
    r.ups = calloc(r.nups + 1, sizeof *r.ups);
    r.rbuf = malloc(READ_SIZE);
    PyObject *result = NULL;
    if (r.listens == NULL || r.ups == NULL || r.rbuf == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < r.nlisten; i++)
        r.listens[i] = (Handle){K_LISTEN, -1};
    for (size_t i = 0; i < r.nlisten; i++) {
        r.listens[i].fd = (int)PyLong_AsLong(PySequence_Fast_GET_ITEM(fds, (Py_ssize_t)i));
        if (PyErr_Occurred())
            goto done;
    }
    for (size_t i = 0; i < r.nups; i++)
        if (parse_upstream(PySequence_Fast_GET_ITEM(ups, (Py_ssize_t)i), &r.ups[i]) < 0)
            goto done;
    r.upstream_text = upstream_text;
    r.resolve_error = resolve_error;
    r.max_conns = (size_t)max_conns;
    r.limit = (size_t)(limit > 0 ? limit : 1);
    /* copies up to limit, then one more record that does not fit (a note, an end) */
    if (r.limit <= SIZE_MAX - 2 * READ_SIZE)
        ring_init(&r.obuf, r.limit + 2 * READ_SIZE);
    r.flush_ns = (int64_t)flush_ms * 1000000;
    r.in = (Handle){K_IN, in_fd};
    r.out = (Handle){K_OUT, out_fd};
    r.ep = epoll_create1(EPOLL_CLOEXEC);
    int failed = r.ep < 0 || set_nonblocking(out_fd) < 0 || set_nonblocking(in_fd) < 0 ||
                 add_handle(&r, &r.in, EPOLLIN) < 0 || add_handle(&r, &r.out, 0) < 0;
    for (size_t i = 0; i < r.nlisten && !failed; i++)
        failed = set_nonblocking(r.listens[i].fd) < 0 || add_handle(&r, &r.listens[i], EPOLLIN) < 0;
    if (failed) {
        PyErr_SetFromErrno(PyExc_OSError);
        goto done;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = relay_loop(&r);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        PyErr_SetFromErrno(PyExc_OSError);
    else
        result = PyLong_FromLong(rc);
done:
    if (r.ep >= 0)
        close(r.ep);
    for (size_t i = 0; r.listens != NULL && i < r.nlisten; i++)
        if (r.listens[i].fd >= 0)
            close(r.listens[i].fd); /* ours (detached from their Python sockets) */
    ring_free(&r.obuf);
    free(r.listens);
    free(r.ups);
    free(r.rbuf);
    Py_DECREF(fds);
    Py_DECREF(ups);
    return result;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS, "Relays until in_fd ends or out_fd's reader goes (see the module's source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_relayloop", "The tap relay's event loop in C (see relay.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__relayloop(void) { return PyModule_Create(&module); }
