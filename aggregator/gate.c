/* Checks each plain-HTTP connection's request before lws parses it (see
 * gate.h). Waiting connections are watched through one epoll descriptor
 * that lws polls as a raw file. The gate peeks (MSG_PEEK) and never reads a
 * request it lets through: lws gets the connection with every byte still
 * in the socket, as if straight from its listener. While the headers are
 * incomplete, SO_RCVLOWAT keeps epoll quiet until more bytes arrive. */
#include "gate.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "request_check.h"
#include "response.h"

typedef struct waiting {
    struct waiting *prev, *next; /* oldest first, the order of their deadlines */
    int fd;
    void *tag;    /* the owner's */
    int relayed;  /* a balancer's connection whose PROXY header is still to be read */
    int answered; /* refused: what the peer still sends is read and dropped until it closes */
    int64_t deadline_ms;
} waiting;

struct agg_gate {
    struct lws_vhost *vh;
    agg_gate_owner owner;
    int epfd; /* lws's once adopted: it closes it with the context */
    int64_t timeout_ms;
    size_t max_header_bytes;
    int tls;      /* requests are not looked at */
    char *peeked; /* room for max_header_bytes + 1 bytes of a request, and for a PROXY header */
    waiting *head, *tail;
};

/* ---------------------------------------------------- the connections */

static void forget(agg_gate *g, waiting *w) {
    if (w->prev)
        w->prev->next = w->next;
    else
        g->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        g->tail = w->prev;
    free(w);
}

static void drop(agg_gate *g, waiting *w) {
    close(w->fd); /* which also takes it out of the epoll set */
    g->owner.closed(g->owner.ctx, w->tag);
    forget(g, w);
}

static int set_low_water(int fd, int bytes) { return setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes); }

/* The request is fine: the owner gets the connection with every byte of
 * it still to read. */
static void hand_over(agg_gate *g, waiting *w) {
    int fd = w->fd;
    void *tag = w->tag;
    epoll_ctl(g->epfd, EPOLL_CTL_DEL, fd, NULL);
    set_low_water(fd, 1);
    forget(g, w);
    g->owner.pass(g->owner.ctx, fd, tag);
}

/* Answers and shuts the sending side; what the peer sends meanwhile is
 * read and dropped until it closes (a socket closed with unread input is
 * reset, and a reset can make the peer lose the answer). */
static void refuse(agg_gate *g, waiting *w, int status, const char *why) {
    char response[RESPONSE_HEAD_MAX];
    int allow = status == 405; /* only GET is served */
    int len = agg_response_text_bytes(response, sizeof response, status, why, allow ? "allow" : NULL, "GET");
    if (len > 0 && send(w->fd, response, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) == len &&
        shutdown(w->fd, SHUT_WR) == 0 && set_low_water(w->fd, 1) == 0)
        w->answered = 1;
    else
        drop(g, w);
}

static void drain(agg_gate *g, waiting *w) {
    char buf[4096];
    ssize_t n = 1;
    for (int i = 0; i < 16 && n > 0; i++) n = recv(w->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) drop(g, w);
}

/* A balancer's connection: its PROXY header peeked until it is whole, then
 * read off the connection and told to the owner. 1 when that is done and
 * the owner kept the connection; 0 while the header is incomplete, or when
 * the connection was refused or is gone. */
static int read_proxy_header(agg_gate *g, waiting *w, uint32_t events) {
    ssize_t n = recv(w->fd, g->peeked, PROXY_HEADER_MAX, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n <= 0) {
        drop(g, w);
        return 0;
    }
    agg_proxy_header header;
    sdfed_error err = {0};
    int rc = agg_proxy_header_read((const unsigned char *)g->peeked, (size_t)n, &header, &err);
    if (rc == PROXY_MORE) { /* no wake-up before the rest of it is in */
        if ((events & EPOLLRDHUP) || set_low_water(w->fd, (int)header.length)) drop(g, w);
        return 0;
    }
    if (rc) {
        refuse(g, w, 400, err.message);
        return 0;
    }
    if (recv(w->fd, g->peeked, header.length, MSG_DONTWAIT) != (ssize_t)header.length || set_low_water(w->fd, 1) ||
        g->owner.relayed(g->owner.ctx, w->tag, &header)) {
        drop(g, w);
        return 0;
    }
    w->relayed = 0;
    return 1;
}

static void serve(agg_gate *g, waiting *w, uint32_t events) {
    if (w->answered) {
        drain(g, w);
        return;
    }
    if (w->relayed && !read_proxy_header(g, w, events)) return;
    if (g->tls) {
        hand_over(g, w);
        return;
    }
    char why[160];
    ssize_t n = recv(w->fd, g->peeked, g->max_header_bytes + 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
        drop(g, w); /* gone before saying anything */
        return;
    }
    int status =
        agg_request_check(g->peeked, (size_t)n, g->max_header_bytes, (events & EPOLLRDHUP) != 0, why, sizeof why);
    if (status == REQUEST_INCOMPLETE) {
        /* the rest is on its way: no wake-up before it grows */
        if (set_low_water(w->fd, (int)n + 1)) drop(g, w);
    } else if (status) {
        refuse(g, w, status, why);
    } else {
        hand_over(g, w);
    }
}

int agg_gate_open(agg_gate **out, struct lws_vhost *vh, const agg_gate_owner *owner, int timeout_s,
                  size_t max_header_bytes, int tls, sdfed_error *err) {
    *out = NULL;
    size_t room = max_header_bytes + 1 < PROXY_HEADER_MAX ? PROXY_HEADER_MAX : max_header_bytes + 1;
    agg_gate *g = calloc(1, sizeof *g);
    char *peeked = g ? malloc(room) : NULL;
    if (!peeked) {
        free(g);
        return sdfed_fail(err, SDFED_ERR_NOMEM, "gate: out of memory");
    }
    *g = (agg_gate){.vh = vh,
                    .owner = *owner,
                    .timeout_ms = 1000 * (int64_t)timeout_s,
                    .max_header_bytes = max_header_bytes,
                    .tls = tls,
                    .peeked = peeked,
                    .epfd = epoll_create1(EPOLL_CLOEXEC)};
    if (g->epfd < 0) {
        int e = errno;
        agg_gate_close(g);
        return sdfed_fail(err, SDFED_ERR_IO, "gate: epoll: %s", strerror(e));
    }
    lws_sock_file_fd_type fd = {.filefd = g->epfd};
    if (!lws_adopt_descriptor_vhost(vh, LWS_ADOPT_RAW_FILE_DESC, fd, NULL, NULL)) {
        agg_gate_close(g);
        return sdfed_fail(err, SDFED_ERR_IO, "gate: lws cannot watch the epoll descriptor");
    }
    *out = g;
    return SDFED_OK;
}

void agg_gate_close(agg_gate *g) {
    if (!g) return;
    while (g->head) drop(g, g->head);
    free(g->peeked);
    free(g);
}

void agg_gate_take(agg_gate *g, int fd, void *tag, int relayed, int64_t now_ms) {
    waiting *w = calloc(1, sizeof *w);
    int own = w ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = w};
    if (own < 0 || epoll_ctl(g->epfd, EPOLL_CTL_ADD, own, &ev) != 0) {
        if (own >= 0) close(own);
        free(w);
        g->owner.closed(g->owner.ctx, tag); /* dropped: no connection reaches lws unchecked */
        return;
    }
    *w = (waiting){.prev = g->tail, .fd = own, .tag = tag, .relayed = relayed, .deadline_ms = now_ms + g->timeout_ms};
    if (g->tail)
        g->tail->next = w;
    else
        g->head = w;
    g->tail = w;
}

void agg_gate_service(agg_gate *g) {
    struct epoll_event ev[64];
    int n = epoll_wait(g->epfd, ev, 64, 0);
    for (int i = 0; i < n; i++) serve(g, ev[i].data.ptr, ev[i].events);
}

void agg_gate_expire(agg_gate *g, int64_t now_ms) {
    while (g->head && g->head->deadline_ms <= now_ms) drop(g, g->head);
}
