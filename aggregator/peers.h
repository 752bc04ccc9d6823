/* What the server keeps per client address, for the limits that must hold
 * across connections (a client that reconnects is the same address): the
 * connections it holds, the wrong join keys it sent and the lock-out they
 * earned, the new clients it registered in the current minute. Also the
 * server's counts of connections and of files being sent (descriptors
 * both), and the counts of what the edge's limits refused (for /metrics),
 * here or where they are decided (peers_refused).
 *
 * Memory is bounded: a table of at most max_addresses addresses, made at
 * start. An address that holds nothing any more (no connection, no
 * lock-out, no registration window, no wrong key in the last day) is
 * forgotten by peers_expire; when the table is full, the address heard from
 * least recently among those without a connection makes room (and so
 * loses what it held). An IPv4 address is one address; an IPv6 address is
 * counted by its /64, the block one subscriber gets. No sockets here, and
 * no lws: the loop says who connects and leaves. */
#ifndef SDFED_AGGREGATOR_PEERS_H
#define SDFED_AGGREGATOR_PEERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/status.h"

/* An address as counted: IPv4 as ::ffff:a.b.c.d, IPv6 with its last 64
 * bits zero. */
typedef struct peer_address {
    unsigned char bytes[16];
} peer_address;

/* A connection as the edge knows it: where it comes from, and whether it
 * came in past max_connections (in the reserve: for the status only). */
typedef struct peer_conn {
    peer_address address;
    int in_reserve;
    int files; /* files being sent on it (peers_file_begin), given back when they end or it does */
} peer_conn;

typedef struct peers_limits {
    int max_addresses;               /* the table's size: at least max_connections + reserve, so that
                                      * every connection has room */
    int max_connections;             /* connections held at once, every address's */
    int reserve;                     /* more of them, for a few requests only (loop.c) */
    int max_connections_per_address; /* connections one address holds at once */
    int max_file_sends;              /* files being sent at once (each holds a descriptor as its connection does) */
    int key_failures;                /* wrong join keys before a lock-out */
    int64_t key_lockout_ms;          /* the first lock-out; each next one lasts twice as long, at most a day */
    int registrations_per_minute;    /* new clients one address registers in a minute */
} peers_limits;

/* A connection's admission (peers_connect). */
typedef enum peers_admission {
    PEERS_ADMITTED,
    PEERS_IN_RESERVE,     /* past max_connections, within the reserve */
    PEERS_ADDRESS_FULL,   /* refused: the address holds max_connections_per_address */
    PEERS_SERVER_FULL,    /* refused: the reserve is full too */
} peers_admission;

/* What the edge refused, counted for /metrics. */
typedef enum peers_refusal {
    PEERS_REFUSED_ADDRESS_CONNECTIONS, /* a connection over its address's limit */
    PEERS_REFUSED_SERVER_CONNECTIONS,  /* a connection over the server's limit and reserve */
    PEERS_REFUSED_RESERVE,             /* a request of a reserve connection that is not for the status */
    PEERS_REFUSED_FILE_SENDS,          /* a file over max_file_sends */
    PEERS_REFUSED_KEY_MISSING,         /* a request or hello without the join key */
    PEERS_REFUSED_KEY_WRONG,           /* a wrong join key (or metrics token) */
    PEERS_REFUSED_KEY_LOCKED,          /* any key from an address locked out */
    PEERS_REFUSED_REGISTRATIONS,       /* a new client over its address's registrations a minute */
    PEERS_REFUSED_DEMO_LEASES,         /* a demo shard over its address's leases */
    PEERS_REFUSED_ORIGIN,              /* a WebSocket upgrade from another origin's page */
    PEERS_REFUSED_NO_HELLO,            /* a connection closed for saying no hello in time */
    PEERS_REFUSAL_COUNT,
} peers_refusal;

typedef struct peers_stats {
    int64_t connections, file_sends, addresses, locked; /* now */
    int64_t refused[PEERS_REFUSAL_COUNT];   /* since the start */
} peers_stats;

typedef struct peers peers;

int peers_open(peers **out, const peers_limits *limits, sdfed_error *err);
void peers_close(peers *p);

/* The address a socket's peer is counted by (getpeername's). */
peer_address peers_address(const struct sockaddr *sa);
/* As people read it: "192.0.2.7", or "2001:db8:1:2::/64". */
void peers_address_text(const peer_address *a, char *out, size_t cap);

/* A new connection from a: admitted and counted, or refused (and counted
 * as refused). */
peers_admission peers_connect(peers *p, const peer_address *a, int64_t now_ms);
/* An admitted connection from a is gone. */
void peers_disconnect(peers *p, const peer_address *a, int64_t now_ms);

/* A file is to be sent: 1 when fewer than max_file_sends are (counted),
 * else 0 (refused, counted as such). */
int peers_file_begin(peers *p);
/* n files sent, or given up. */
void peers_files_end(peers *p, int n);

/* How long a is still locked out of presenting keys (ms; 0: it is not). */
int64_t peers_key_locked_ms(peers *p, const peer_address *a, int64_t now_ms);
/* a presented a wrong key: the lock-out this earned it (ms; 0: none yet). */
int64_t peers_key_failed(peers *p, const peer_address *a, int64_t now_ms);
/* a presented the right key: its wrong keys so far are forgiven (not its
 * lock-outs, which still double). */
void peers_key_succeeded(peers *p, const peer_address *a);

/* a registers a new client: 0 when it may (counted), else how long until
 * it may (ms). */
int64_t peers_register(peers *p, const peer_address *a, int64_t now_ms);

/* Counts a refusal decided elsewhere. */
void peers_refused(peers *p, peers_refusal why);
/* Forgets the addresses that hold nothing any more (at most once a second). */
void peers_expire(peers *p, int64_t now_ms);
void peers_get_stats(const peers *p, int64_t now_ms, peers_stats *out);
/* "address_connections", "server_connections", ... for /metrics. */
const char *peers_refusal_name(peers_refusal why);

#endif
