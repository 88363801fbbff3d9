/* --host: the address to listen on, given as a number or as a name (localhost, the
 * machine's own name) that the system's resolver (getaddrinfo: /etc/hosts, DNS) turns
 * into one. */
#include "serve/serve_internal.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

bool srv_host_address(const char *host, int port, struct sockaddr_storage *out, socklen_t *len,
                      char *msg, size_t msg_size) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc) {
        snprintf(msg, msg_size, "not an IPv4 or IPv6 address, nor a name this machine resolves (%s)",
                 gai_strerror(rc));
        return false;
    }
    /* one socket: a name with both kinds (localhost on some systems) listens on IPv4 */
    const struct addrinfo *pick = NULL;
    for (const struct addrinfo *a = res; a && !pick; a = a->ai_next)
        if (a->ai_family == AF_INET) pick = a;
    for (const struct addrinfo *a = res; a && !pick; a = a->ai_next)
        if (a->ai_family == AF_INET6) pick = a;
    if (pick && pick->ai_addrlen <= sizeof *out) {
        memset(out, 0, sizeof *out);
        memcpy(out, pick->ai_addr, pick->ai_addrlen);
        *len = pick->ai_addrlen;
    } else {
        snprintf(msg, msg_size, "the name resolves to no IPv4 or IPv6 address");
        pick = NULL;
    }
    freeaddrinfo(res);
    return pick != NULL;
}

bool srv_address_loopback(const struct sockaddr *a) {
    if (a->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->sa_family != AF_INET6) return false;
    const struct in6_addr *x = &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(x) || (IN6_IS_ADDR_V4MAPPED(x) && x->s6_addr[12] == 127);
}
