/* The physical limit of a client's timing: C keep-alive connections, each sending the next
 * request body when its answer ends; one thread spinning on epoll_wait(0) and stamping every
 * read() with CLOCK_MONOTONIC (perf_counter_ns's clock) as it returns. No parsing on the way.
 * usage: spin_reader HOST PORT PATH C BODIES OUT   (BODIES: one JSON body per line)
 * OUT, per request: "index send_ns bytes reads\n", reads lines "ns end_offset\n", the raw
 * answer (headers, chunked body) and "\n". Built at bench time with the system compiler. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

typedef struct { long ns, end; } Read;
typedef struct { char *raw; long len, cap, nreads, rcap, send_ns; Read *reads; } Answer;
typedef struct { int fd, request; } Conn;

static long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

static char **bodies; static int n_bodies, next_body; static Answer *answers;
static const char *host, *path;

static void send_next(Conn *c) {
  c->request = next_body < n_bodies ? next_body++ : -1;
  if (c->request < 0) return;
  char head[512]; const char *body = bodies[c->request];
  int h = snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: "
                   "application/json\r\nContent-Length: %zu\r\n\r\n", path, host, strlen(body));
  char *req = malloc(h + strlen(body)); memcpy(req, head, h); memcpy(req + h, body, strlen(body));
  answers[c->request].send_ns = now_ns();
  if (write(c->fd, req, h + strlen(body)) < 0) { perror("write"); exit(1); }
  free(req);
}

static int on_read(Conn *c, const char *buf, long n, long ns) {  /* 1 when the answer ended */
  Answer *a = &answers[c->request];
  if (a->len + n > a->cap) { a->cap = 2 * (a->len + n); a->raw = realloc(a->raw, a->cap); }
  memcpy(a->raw + a->len, buf, n); a->len += n;
  if (a->nreads == a->rcap) { a->rcap = a->rcap ? 2 * a->rcap : 256; a->reads = realloc(a->reads, a->rcap * sizeof(Read)); }
  a->reads[a->nreads++] = (Read){ns, a->len};
  return a->len >= 7 && memcmp(a->raw + a->len - 7, "\r\n0\r\n\r\n", 7) == 0;
}

int main(int argc, char **argv) {
  if (argc != 7) { fprintf(stderr, "usage: spin_reader HOST PORT PATH C BODIES OUT\n"); return 2; }
  host = argv[1]; path = argv[3]; int conns = atoi(argv[4]);
  FILE *in = fopen(argv[5], "r"); char *line = NULL; size_t cap = 0; ssize_t got;
  while ((got = getline(&line, &cap, in)) > 0) {
    line[strcspn(line, "\n")] = 0; bodies = realloc(bodies, (n_bodies + 1) * sizeof(char *));
    bodies[n_bodies++] = strdup(line);
  }
  answers = calloc(n_bodies, sizeof(Answer));
  int ep = epoll_create1(0), open_conns = 0; Conn *cs = calloc(conns, sizeof(Conn));
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
  inet_pton(AF_INET, host, &addr.sin_addr);
  for (int i = 0; i < conns; i++) {
    cs[i].fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(cs[i].fd, (struct sockaddr *)&addr, sizeof addr) < 0) { perror("connect"); return 1; }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cs[i]};
    epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
    send_next(&cs[i]); open_conns += cs[i].request >= 0;
  }
  static char buf[1 << 16]; struct epoll_event evs[64];
  while (open_conns > 0) {
    int n = epoll_wait(ep, evs, 64, 0);  /* spin: never sleep in the kernel */
    for (int i = 0; i < n; i++) {
      Conn *c = evs[i].data.ptr; long r = read(c->fd, buf, sizeof buf), ns = now_ns();
      if (r <= 0) { fprintf(stderr, "connection closed early\n"); return 1; }
      if (on_read(c, buf, r, ns)) { send_next(c); open_conns -= c->request < 0; }
    }
  }
  FILE *out = fopen(argv[6], "w");
  for (int i = 0; i < n_bodies; i++) {
    Answer *a = &answers[i];
    fprintf(out, "%d %ld %ld %ld\n", i, a->send_ns, a->len, a->nreads);
    for (long k = 0; k < a->nreads; k++) fprintf(out, "%ld %ld\n", a->reads[k].ns, a->reads[k].end);
    fwrite(a->raw, 1, a->len, out); fputc('\n', out);
  }
  return fclose(out) != 0;
}
