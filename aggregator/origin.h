/* Which pages may open the sdfed.v1 WebSocket. A browser says in an
 * upgrade's Origin header which page opens it; any site's page can try, so
 * that a page elsewhere could act as a volunteer who visits it. An upgrade
 * is let in when its Origin is this server's own (its host and port are
 * those of the upgrade's Host header; the scheme is not compared, since a
 * proxy may end TLS in front of the server), when it is one of the origins
 * allowed (--allow-origin, "*" for any), or when it has no Origin at all (a
 * headless client, not a page in a browser). Origins are compared as RFC
 * 6454 writes them: scheme and host in lower case, a port only when it is
 * not the scheme's default (http 80, https 443). */
#ifndef SDFED_AGGREGATOR_ORIGIN_H
#define SDFED_AGGREGATOR_ORIGIN_H

#include <stddef.h>

#include "base/status.h"

enum { ORIGIN_MAX = 256, ORIGINS_ALLOWED_MAX = 16 };

typedef struct agg_origins {
    char allowed[ORIGINS_ALLOWED_MAX][ORIGIN_MAX]; /* as RFC 6454 writes them */
    int n;
    int any; /* "*" was given */
} agg_origins;

/* Adds an --allow-origin value: "scheme://host[:port]" or "*"; an error
 * naming it when it is not an origin or there are too many. */
int agg_origins_allow(agg_origins *o, const char *origin, sdfed_error *err);
/* Whether an upgrade with this Origin (NULL: none) and Host may come in. */
int agg_origins_let_in(const agg_origins *o, const char *origin, const char *host);

#endif
