// Many light RTSP clients in one process, for benchmarks/rtsp-clients.sh: each does DESCRIBE, SETUP (RTP over
// TCP interleaved, or RTP over UDP unicast) and PLAY against any RTSP 1.0 server (written from RFC 2326,
// RFC 3550 and RFC 6184; it shares no code with camrec), then reads with epoll until its connection closes
// or the time is up, sending a GET_PARAMETER keep-alive every 20 s. Per client it counts RTP packets, the
// packets missing from the sequence numbers, and access units (the marker bit) from its first IDR on, with
// the RTP timestamps of the first and the last; every Kth client also writes its access units from the
// first IDR as Annex B for an independent decode. So one process serves 100 clients at 4 Mbit/s with a
// few percent of a core, and its CPU stays out of the server's.
//   rtsp-load URL TCP UDP SECONDS PREFIX [K]
// Prints "playing N" when every PLAY was answered 200, then one line per client:
//   client ID tcp|udp packets P lost L aus A before_idr B first_ts F last_ts T odd_steps S closed C
// Build: gcc -O2 -o rtsp-load benchmarks/rtsp-load.c
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int id, udp, fd, rtp_fd, rtcp_fd, closed, playing, done;
    unsigned char *buf;
    size_t len, cap;
    char session[128];
    long packets, lost, aus, before_idr, odd_steps;
    int have_seq, started, cur_idr, cur_any;
    uint16_t last_seq;
    uint32_t first_ts, last_ts, cur_ts;
    FILE *out;
    unsigned char *au;
    size_t au_len, au_cap;
} client;

static char host[256], port_text[16], url[512], base_url[512], track_url[600];
static int cseq_counter = 10;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static void append(client *c, const void *data, size_t n) {
    if (c->len + n > c->cap) {
        c->cap = (c->len + n) * 2;
        c->buf = realloc(c->buf, c->cap);
    }
    memcpy(c->buf + c->len, data, n);
    c->len += n;
}

static void au_append(client *c, const unsigned char *nal, size_t n, const unsigned char *prefix, size_t pn) {
    if (!c->out) return;
    size_t need = c->au_len + n + pn + 4;
    if (need > c->au_cap) {
        c->au_cap = need * 2;
        c->au = realloc(c->au, c->au_cap);
    }
    if (prefix == NULL) {  // a NAL unit's start: a 4-byte start code
        memcpy(c->au + c->au_len, "\0\0\0\1", 4);
        c->au_len += 4;
    } else {
        memcpy(c->au + c->au_len, prefix, pn);
        c->au_len += pn;
    }
    memcpy(c->au + c->au_len, nal, n);
    c->au_len += n;
}

// The end of an access unit (marker bit, or a new timestamp after a lost marker).
static void end_au(client *c) {
    if (!c->cur_any) return;
    if (!c->started && c->cur_idr) {
        c->started = 1;
        c->first_ts = c->cur_ts;
    } else if (c->started) {
        uint32_t step = c->cur_ts - c->last_ts;
        if (step < 2900 || step > 3100) c->odd_steps++;  // Matroska keeps milliseconds: 2970 or 3060
    }
    if (c->started) {
        c->aus++;
        c->last_ts = c->cur_ts;
        if (c->out) fwrite(c->au, 1, c->au_len, c->out);
    } else {
        c->before_idr++;
    }
    c->au_len = 0;
    c->cur_idr = 0;
    c->cur_any = 0;
}

static void rtp(client *c, const unsigned char *p, size_t n) {
    if (n < 13 || (p[0] >> 6) != 2) return;
    size_t header = 12 + 4 * (p[0] & 0x0F);
    if (p[0] & 0x10) {  // an extension header
        if (n < header + 4) return;
        header += 4 + 4 * ((p[header + 2] << 8) | p[header + 3]);
    }
    if (n <= header) return;
    uint16_t seq = (p[2] << 8) | p[3];
    uint32_t ts = (uint32_t)p[4] << 24 | p[5] << 16 | p[6] << 8 | p[7];
    int marker = p[1] & 0x80;
    c->packets++;
    if (c->have_seq && seq != (uint16_t)(c->last_seq + 1)) c->lost += (uint16_t)(seq - c->last_seq - 1);
    c->have_seq = 1;
    c->last_seq = seq;
    if (c->cur_any && ts != c->cur_ts) end_au(c);
    c->cur_ts = ts;
    c->cur_any = 1;
    const unsigned char *d = p + header;
    size_t dn = n - header;
    int type = d[0] & 0x1F;
    if (type == 28 && dn > 2) {  // FU-A
        int start = d[1] & 0x80, t = d[1] & 0x1F;
        if (t == 5) c->cur_idr = 1;
        if (start) {
            unsigned char h = (d[0] & 0xE0) | t;
            au_append(c, &h, 1, NULL, 0);
        }
        au_append(c, d + 2, dn - 2, (const unsigned char *)"", 0);
    } else if (type == 24) {  // STAP-A
        size_t i = 1;
        while (i + 2 < dn) {
            size_t len = (d[i] << 8) | d[i + 1];
            if (i + 2 + len > dn || len == 0) break;
            if ((d[i + 2] & 0x1F) == 5) c->cur_idr = 1;
            au_append(c, d + i + 2, len, NULL, 0);
            i += 2 + len;
        }
    } else {
        if (type == 5) c->cur_idr = 1;
        au_append(c, d, dn, NULL, 0);
    }
    if (marker) end_au(c);
}

// Reads one RTSP response (blocking) into c->buf; returns its status, leaves what follows it in c->buf.
static int response(client *c, char *head, size_t head_size, char **body, size_t *body_len) {
    for (;;) {
        char *end = c->len ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
        if (end && c->buf[0] != '$') {
            size_t hl = end + 4 - (char *)c->buf;
            char *cl = memmem(c->buf, hl, "Content-Length:", 15);
            size_t length = cl ? strtoul(cl + 15, NULL, 10) : 0;
            if (c->len >= hl + length) {
                size_t copy = hl < head_size - 1 ? hl : head_size - 1;
                memcpy(head, c->buf, copy);
                head[copy] = 0;
                if (body) {
                    *body = malloc(length + 1);
                    memcpy(*body, c->buf + hl, length);
                    (*body)[length] = 0;
                    *body_len = length;
                }
                memmove(c->buf, c->buf + hl + length, c->len - hl - length);
                c->len -= hl + length;
                return atoi(head + 9);
            }
        }
        unsigned char tmp[65536];
        ssize_t r = recv(c->fd, tmp, sizeof tmp, 0);
        if (r <= 0) return -1;
        append(c, tmp, r);
    }
}

static const char *header(const char *head, const char *name, char *value, size_t size) {
    const char *h = strcasestr(head, name);
    if (!h) return NULL;
    h += strlen(name);
    while (*h == ' ') h++;
    size_t n = strcspn(h, "\r\n");
    if (n >= size) n = size - 1;
    memcpy(value, h, n);
    value[n] = 0;
    return value;
}

static void send_text(client *c, const char *text) {
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = send(c->fd, text + off, n - off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN) { usleep(1000); continue; }
            return;
        }
        off += w;
    }
}

static int bind_udp_pair(int *rtp_fd, int *rtcp_fd) {
    for (int tries = 0; tries < 200; tries++) {
        int a = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), b = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
        int size = 4 << 20;
        setsockopt(a, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
        struct sockaddr_in s = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t sl = sizeof s;
        if (bind(a, (struct sockaddr *)&s, sizeof s) == 0 && getsockname(a, (struct sockaddr *)&s, &sl) == 0 &&
            ntohs(s.sin_port) % 2 == 0) {
            s.sin_port = htons(ntohs(s.sin_port) + 1);
            if (bind(b, (struct sockaddr *)&s, sizeof s) == 0) {
                *rtp_fd = a;
                *rtcp_fd = b;
                return ntohs(s.sin_port) - 1;
            }
        }
        close(a);
        close(b);
    }
    return -1;
}

static void setup(client *c) {
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, port_text, &hints, &ai)) die("getaddrinfo");
    c->fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (connect(c->fd, ai->ai_addr, ai->ai_addrlen)) die("connect");
    freeaddrinfo(ai);
    struct timeval tv = {10, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char req[1024], head[8192], value[512], *sdp = NULL;
    size_t sdp_len = 0;
    snprintf(req, sizeof req, "DESCRIBE %s RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\nUser-Agent: rtsp-load\r\n\r\n", url);
    send_text(c, req);
    int status = response(c, head, sizeof head, &sdp, &sdp_len);
    if (status != 200) { fprintf(stderr, "client %d: DESCRIBE %d\n", c->id, status); exit(2); }
    if (!base_url[0]) {
        if (header(head, "\nContent-Base:", value, sizeof value)) snprintf(base_url, sizeof base_url, "%s", value);
        else snprintf(base_url, sizeof base_url, "%s", url);
        // The first media's control attribute, absolute or relative to the base.
        char *m = strstr(sdp, "\nm=video"), *ctl = m ? strstr(m, "a=control:") : NULL;
        char control[256] = "";
        if (ctl) { ctl += 10; size_t n = strcspn(ctl, "\r\n"); if (n > 255) n = 255; memcpy(control, ctl, n); control[n] = 0; }
        if (!strncmp(control, "rtsp://", 7)) snprintf(track_url, sizeof track_url, "%s", control);
        else snprintf(track_url, sizeof track_url, "%s%s%s", base_url, base_url[strlen(base_url) - 1] == '/' ? "" : "/", control);
    }
    free(sdp);
    char transport[128];
    if (c->udp) {
        int p = bind_udp_pair(&c->rtp_fd, &c->rtcp_fd);
        if (p < 0) die("udp ports");
        snprintf(transport, sizeof transport, "RTP/AVP;unicast;client_port=%d-%d", p, p + 1);
    } else {
        snprintf(transport, sizeof transport, "RTP/AVP/TCP;unicast;interleaved=0-1");
        int size = 4 << 20;
        setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    }
    snprintf(req, sizeof req, "SETUP %s RTSP/1.0\r\nCSeq: 2\r\nTransport: %s\r\nUser-Agent: rtsp-load\r\n\r\n", track_url, transport);
    send_text(c, req);
    status = response(c, head, sizeof head, NULL, NULL);
    if (status != 200 || !header(head, "\nSession:", value, sizeof value)) {
        fprintf(stderr, "client %d: SETUP %d\n", c->id, status);
        exit(2);
    }
    value[strcspn(value, ";")] = 0;
    snprintf(c->session, sizeof c->session, "%s", value);
}

// What arrived on the TCP connection: RTSP responses (PLAY's, the keep-alives') and interleaved frames.
static void tcp_data(client *c) {
    size_t at = 0;
    while (at < c->len) {
        unsigned char *p = c->buf + at;
        size_t left = c->len - at;
        if (p[0] == '$') {
            if (left < 4) break;
            size_t n = (p[2] << 8) | p[3];
            if (left < 4 + n) break;
            if (p[1] == 0) rtp(c, p + 4, n);
            at += 4 + n;
        } else {
            char *end = memmem(p, left, "\r\n\r\n", 4);
            if (!end) break;
            size_t hl = end + 4 - (char *)p;
            char *cl = memmem(p, hl, "Content-Length:", 15);
            size_t length = cl ? strtoul(cl + 15, NULL, 10) : 0;
            if (left < hl + length) break;
            if (!c->playing) {
                if (left < 12 || memcmp(p, "RTSP/1.0 200", 12)) {
                    fprintf(stderr, "client %d: PLAY: %.12s\n", c->id, p);
                    exit(2);
                }
                c->playing = 1;
            }
            at += hl + length;
        }
    }
    memmove(c->buf, c->buf + at, c->len - at);
    c->len -= at;
}

static void drain_udp(client *c) {
    struct mmsghdr msgs[64];
    struct iovec iov[64];
    static unsigned char data[64][2048];
    for (int i = 0; i < 64; i++) {
        iov[i] = (struct iovec){data[i], sizeof data[i]};
        msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
    }
    for (;;) {
        int n = recvmmsg(c->rtp_fd, msgs, 64, MSG_DONTWAIT, NULL);
        if (n <= 0) break;
        for (int i = 0; i < n; i++) rtp(c, data[i], msgs[i].msg_len);
    }
    unsigned char sink[2048];
    while (recv(c->rtcp_fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {}
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: rtsp-load URL TCP UDP SECONDS PREFIX [K]\n");
        return 2;
    }
    snprintf(url, sizeof url, "%s", argv[1]);
    if (sscanf(url, "rtsp://%255[^:/]:%15[0-9]", host, port_text) < 1) die("url");
    if (!port_text[0]) strcpy(port_text, "554");
    int ntcp = atoi(argv[2]), nudp = atoi(argv[3]), n = ntcp + nudp, every = argc > 6 ? atoi(argv[6]) : 0;
    double seconds = atof(argv[4]);
    client *cs = calloc(n, sizeof *cs);
    for (int i = 0; i < n; i++) {
        client *c = &cs[i];
        c->id = i;
        c->udp = i >= ntcp;
        c->rtp_fd = c->rtcp_fd = -1;
        setup(c);
        if (every > 0 && i % every == 0) {
            char path[600];
            snprintf(path, sizeof path, "%s%d.h264", argv[5], i);
            c->out = fopen(path, "wb");
            if (!c->out) die(path);
        }
    }
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        client *c = &cs[i];
        struct epoll_event e = {.events = EPOLLIN, .data.u64 = (uint64_t)i << 1};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &e)) die("epoll");
        if (c->udp) {
            e.data.u64 = (uint64_t)i << 1 | 1;
            if (epoll_ctl(ep, EPOLL_CTL_ADD, c->rtp_fd, &e)) die("epoll");
        }
    }
    // PLAY on every connection at once; the answers come in the epoll loop, before or among the packets.
    char req[1024];
    for (int i = 0; i < n; i++) {
        snprintf(req, sizeof req, "PLAY %s RTSP/1.0\r\nCSeq: 3\r\nSession: %s\r\nUser-Agent: rtsp-load\r\n\r\n", base_url, cs[i].session);
        send_text(&cs[i], req);
    }
    double start = now(), next_keepalive = start + 20, deadline = start + seconds;
    int announced = 0, open = n;
    struct epoll_event events[256];
    unsigned char tmp[1 << 16];
    while (open > 0 && now() < deadline) {
        int k = epoll_wait(ep, events, 256, 200);
        for (int j = 0; j < k; j++) {
            client *c = &cs[events[j].data.u64 >> 1];
            if (events[j].data.u64 & 1) { drain_udp(c); continue; }
            for (;;) {
                ssize_t r = recv(c->fd, tmp, sizeof tmp, MSG_DONTWAIT);
                if (r > 0) {
                    append(c, tmp, r);
                    if ((size_t)r < sizeof tmp) break;
                    continue;
                }
                if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                    // The server ended the session: what it sent over UDP before that is already queued.
                    c->closed = 1;
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                    if (c->udp) { drain_udp(c); epoll_ctl(ep, EPOLL_CTL_DEL, c->rtp_fd, NULL); }
                    open--;
                }
                break;
            }
            tcp_data(c);
        }
        if (!announced) {
            int playing = 0;
            for (int i = 0; i < n; i++) playing += cs[i].playing;
            if (playing == n) { printf("playing %d\n", n); fflush(stdout); announced = 1; }
        }
        if (now() >= next_keepalive) {
            next_keepalive += 20;
            for (int i = 0; i < n; i++) {
                if (cs[i].closed) continue;
                snprintf(req, sizeof req, "GET_PARAMETER %s RTSP/1.0\r\nCSeq: %d\r\nSession: %s\r\n\r\n", base_url, ++cseq_counter, cs[i].session);
                send_text(&cs[i], req);
            }
        }
    }
    for (int i = 0; i < n; i++) {
        client *c = &cs[i];
        if (c->udp && !c->closed) drain_udp(c);
        if (c->out) fclose(c->out);
        printf("client %d %s packets %ld lost %ld aus %ld before_idr %ld first_ts %u last_ts %u odd_steps %ld closed %d\n", c->id,
               c->udp ? "udp" : "tcp", c->packets, c->lost, c->aus, c->before_idr, c->first_ts, c->last_ts, c->odd_steps, c->closed);
    }
    return 0;
}
