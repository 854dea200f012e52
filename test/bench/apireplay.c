/* apireplay: the benchmark's fresh-process Kubernetes API floor. A minimal HTTPS/1.1
 * client on OpenSSL 3, written the way any CNI plugin would have to talk to the API server: a TLS
 * client context trusting only the given CA file (never the system store), TLS 1.2 or later,
 * verification of the server certificate and of the host name or IP address (SNI for names), an
 * optional bearer token (read from a file, like a kubeconfig's tokenFile) or client certificate,
 * then every request of a request file sent over one kept-alive connection, each answer read fully
 * (Content-Length or chunked). It exits 1 on any error or on an HTTP status >= 400, 0 otherwise, and
 * writes nothing to stdout. OpenSSL is initialised without reading openssl.cnf, as manifold does,
 * so the floor is the least any fresh process pays for the same requests; the benchmark runs
 * it under benchexec from fork to reaping, exactly as it runs manifold.
 *
 *   apireplay --server https://HOST:PORT --ca CA.pem [--address IP] [--token-file FILE]
 *             [--cert CERT.pem --key KEY.pem] [--session FILE] REQUESTS
 *
 * With --session FILE it resumes TLS sessions across runs as manifold does: the session stored in
 * FILE (PEM) by an earlier run is offered, the CA is then loaded only if the server declines it (to
 * verify the full handshake), and the session of a full handshake is written to FILE (0600).
 *
 * --address is the IP to connect to when HOST is a name (no resolver: the floor is the API
 * conversation itself). REQUESTS holds, per request: a line "METHOD TARGET BODY_LENGTH [pipelined]",
 * header lines "Name: value", an empty line, then BODY_LENGTH bytes of body. Host, Content-Length
 * (for a body or a POST/PUT/PATCH) and, with --token-file, Authorization are added here. A request
 * marked "pipelined" is written together with the one before it (in one write, before either answer
 * is read), as manifold pipelines a batch, so the floor has manifold's round trips. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILE (64u << 20)
#define MAX_HEADER_BLOCK (64u << 10)
#define MAX_BODY (16u << 20)

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("apireplay: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  if (ERR_peek_error() != 0) ERR_print_errors_fp(stderr);
  exit(1);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory");
  return p;
}

/* Reads a whole file (at most MAX_FILE bytes), NUL-terminated; *len gets its size. */
static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) die("cannot open %s: %s", path, strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = xmalloc(cap);
  for (;;) {
    if (n + 1 >= cap) {
      if (cap >= MAX_FILE) die("%s is larger than %u bytes", path, MAX_FILE);
      cap *= 2;
      buf = realloc(buf, cap);
      if (!buf) die("out of memory");
    }
    size_t got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) die("cannot read %s", path);
  fclose(f);
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* ---- the request file ---------------------------------------------------------------------- */

struct request {
  char method[16];
  char *target;
  char *headers; /* "Name: value\r\n" lines */
  const char *body;
  size_t body_len;
  int pipelined; /* sent in the same write as the request before it */
};

static int is_token_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Parses the request file into an array; *count gets its length. */
static struct request *parse_requests(char *text, size_t len, size_t *count) {
  size_t cap = 8, n = 0, pos = 0;
  struct request *out = xmalloc(cap * sizeof *out);
  while (pos < len) {
    char *line = text + pos;
    char *nl = memchr(line, '\n', len - pos);
    if (!nl) die("request %zu: unterminated request line", n + 1);
    *nl = '\0';
    pos = (size_t)(nl - text) + 1;
    if (n == cap) {
      cap *= 2;
      out = realloc(out, cap * sizeof *out);
      if (!out) die("out of memory");
    }
    struct request *r = &out[n];
    char target[8192];
    unsigned long long body_len;
    char mark[16] = "";
    int fields = sscanf(line, "%15s %8191s %llu %15s", r->method, target, &body_len, mark);
    if (fields < 3 || (fields == 4 && strcmp(mark, "pipelined") != 0))
      die("request %zu: bad request line \"%s\"", n + 1, line);
    r->pipelined = fields == 4 && n > 0;
    for (const char *c = r->method; *c; ++c)
      if (!is_token_char(*c)) die("request %zu: bad method", n + 1);
    if (target[0] != '/') die("request %zu: the target must start with '/'", n + 1);
    for (const char *c = target; *c; ++c)
      if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f) die("request %zu: bad target", n + 1);
    r->target = strdup(target);
    if (!r->target) die("out of memory");
    size_t hcap = 256, hlen = 0;
    r->headers = xmalloc(hcap);
    for (;;) {
      line = text + pos;
      nl = memchr(line, '\n', len - pos);
      if (!nl) die("request %zu: headers not terminated by an empty line", n + 1);
      *nl = '\0';
      pos = (size_t)(nl - text) + 1;
      size_t l = strlen(line);
      if (l == 0) break;
      const char *colon = strchr(line, ':');
      if (!colon || colon == line) die("request %zu: bad header line", n + 1);
      for (const char *c = line; c < colon; ++c)
        if (!is_token_char(*c)) die("request %zu: bad header name", n + 1);
      for (const char *c = colon; *c; ++c)
        if (*c == '\r') die("request %zu: header with a carriage return", n + 1);
      if (hlen + l + 3 > hcap) {
        while (hlen + l + 3 > hcap) hcap *= 2;
        r->headers = realloc(r->headers, hcap);
        if (!r->headers) die("out of memory");
      }
      memcpy(r->headers + hlen, line, l);
      hlen += l;
      memcpy(r->headers + hlen, "\r\n", 3);
      hlen += 2;
    }
    r->headers[hlen] = '\0';
    if (body_len > len - pos) die("request %zu: body shorter than %llu bytes", n + 1, body_len);
    r->body = text + pos;
    r->body_len = (size_t)body_len;
    pos += (size_t)body_len;
    ++n;
  }
  *count = n;
  return out;
}

/* ---- TLS connection -------------------------------------------------------------------------- */

struct conn {
  SSL *ssl;
  int fd;
  char buf[16384];
  size_t start, end; /* unread bytes are buf[start, end) */
};

static void tls_fail(const char *what, SSL *ssl, int ret) {
  int err = SSL_get_error(ssl, ret);
  long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) die("%s: certificate rejected: %s", what, X509_verify_cert_error_string(verify));
  die("%s failed (SSL error %d, errno %s)", what, err, strerror(errno));
}

/* ---- session resumption across runs ---------------------------------------------------------- */

static SSL_SESSION *load_session(const char *path) {
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f) return NULL;
  SSL_SESSION *s = PEM_read_SSL_SESSION(f, NULL, NULL, NULL);
  fclose(f);
  if (s && (SSL_SESSION_is_resumable(s) != 1 ||
            (time_t)SSL_SESSION_get_time(s) + (time_t)SSL_SESSION_get_timeout(s) <= time(NULL))) {
    SSL_SESSION_free(s);
    s = NULL;
  }
  return s;
}

static void save_session(const char *path, SSL *ssl) {
  SSL_SESSION *s = SSL_get1_session(ssl);
  if (!s) return;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (f) {
    fchmod(fileno(f), 0600);
    int ok = PEM_write_SSL_SESSION(f, s) == 1;
    if (fclose(f) == 0 && ok) rename(tmp, path);
    else unlink(tmp);
  }
  SSL_SESSION_free(s);
}

/* Verification when the CA was deferred: reached only when the server presented its certificate. */
static int verify_with_deferred_ca(X509_STORE_CTX *store_ctx, void *ca) {
  static int loaded = 0;
  if (!loaded && X509_STORE_load_file(X509_STORE_CTX_get0_store(store_ctx), (const char *)ca) != 1) return 0;
  loaded = 1;
  return X509_verify_cert(store_ctx);
}

static SSL_SESSION *offered; /* the stored session, offered on every connection */

static void conn_open(struct conn *c, SSL_CTX *ctx, const struct sockaddr_storage *addr, socklen_t addr_len,
                      const char *host, int host_is_ip) {
  c->fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd < 0) die("socket: %s", strerror(errno));
  if (connect(c->fd, (const struct sockaddr *)addr, addr_len) != 0) die("connect: %s", strerror(errno));
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->ssl = SSL_new(ctx);
  if (!c->ssl) die("SSL_new");
  if (!host_is_ip && SSL_set_tlsext_host_name(c->ssl, host) != 1) die("cannot set the server name");
  X509_VERIFY_PARAM *param = SSL_get0_param(c->ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  int ok = host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host) : X509_VERIFY_PARAM_set1_host(param, host, 0);
  if (ok != 1) die("cannot set up host verification for %s", host);
  if (SSL_set_fd(c->ssl, c->fd) != 1) die("SSL_set_fd");
  if (offered) SSL_set_session(c->ssl, offered);
  int ret = SSL_connect(c->ssl);
  if (ret != 1) tls_fail("TLS handshake", c->ssl, ret);
  c->start = c->end = 0;
}

static void conn_close(struct conn *c) {
  if (c->ssl) {
    SSL_shutdown(c->ssl);
    SSL_free(c->ssl);
    c->ssl = NULL;
  }
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

static void conn_write(struct conn *c, const char *data, size_t len) {
  while (len > 0) {
    size_t written = 0;
    int ret = SSL_write_ex(c->ssl, data, len, &written);
    if (ret != 1) tls_fail("writing the request", c->ssl, ret);
    data += written;
    len -= written;
  }
}

/* Refills the buffer (which must be empty of unread data or compacted); dies at end of stream. */
static void conn_fill(struct conn *c) {
  if (c->start > 0) {
    memmove(c->buf, c->buf + c->start, c->end - c->start);
    c->end -= c->start;
    c->start = 0;
  }
  if (c->end == sizeof c->buf) die("answer line longer than %zu bytes", sizeof c->buf);
  size_t got = 0;
  int ret = SSL_read_ex(c->ssl, c->buf + c->end, sizeof c->buf - c->end, &got);
  if (ret != 1) tls_fail("reading the answer", c->ssl, ret);
  c->end += got;
}

/* One line without its CRLF (or LF), copied into line (size cap). */
static size_t conn_line(struct conn *c, char *line, size_t cap) {
  for (;;) {
    char *nl = memchr(c->buf + c->start, '\n', c->end - c->start);
    if (nl) {
      size_t l = (size_t)(nl - (c->buf + c->start));
      size_t keep = (l > 0 && nl[-1] == '\r') ? l - 1 : l;
      if (keep + 1 > cap) die("answer line too long");
      memcpy(line, c->buf + c->start, keep);
      line[keep] = '\0';
      c->start += l + 1;
      return keep;
    }
    conn_fill(c);
  }
}

/* Reads (and discards into a counter) exactly n body bytes. */
static void conn_skip(struct conn *c, size_t n) {
  while (n > 0) {
    if (c->start == c->end) {
      c->start = c->end = 0;
      conn_fill(c);
    }
    size_t take = c->end - c->start < n ? c->end - c->start : n;
    c->start += take;
    n -= take;
  }
}

/* Reads one full answer; returns its status and sets *keep_alive. */
static int read_answer(struct conn *c, int *keep_alive) {
  char line[8192];
  conn_line(c, line, sizeof line);
  int major = 0, minor = 0, status = 0;
  if (sscanf(line, "HTTP/%d.%d %d", &major, &minor, &status) != 3 || status < 100 || status > 999)
    die("bad status line \"%s\"", line);
  long long content_length = -1;
  int chunked = 0;
  size_t header_bytes = 0;
  *keep_alive = !(major == 1 && minor == 0);
  for (;;) {
    size_t l = conn_line(c, line, sizeof line);
    header_bytes += l + 2;
    if (header_bytes > MAX_HEADER_BLOCK) die("answer headers larger than %u bytes", MAX_HEADER_BLOCK);
    if (l == 0) break;
    char *colon = strchr(line, ':');
    if (!colon) die("bad header line in the answer");
    *colon = '\0';
    char *value = colon + 1;
    while (*value == ' ' || *value == '\t') ++value;
    if (strcasecmp(line, "Content-Length") == 0) {
      char *end;
      errno = 0;
      content_length = strtoll(value, &end, 10);
      if (errno || end == value || content_length < 0) die("bad Content-Length");
    } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
      chunked = strcasestr(value, "chunked") != NULL;
    } else if (strcasecmp(line, "Connection") == 0) {
      if (strcasestr(value, "close")) *keep_alive = 0;
      if (strcasestr(value, "keep-alive")) *keep_alive = 1;
    }
  }
  if (status < 200 || status == 204 || status == 304) return status; /* no body */
  if (chunked) {
    size_t total = 0;
    for (;;) {
      conn_line(c, line, sizeof line);
      char *end;
      errno = 0;
      unsigned long long size = strtoull(line, &end, 16);
      if (errno || end == line) die("bad chunk size line");
      if (size > MAX_BODY || (total += size) > MAX_BODY) die("answer body larger than %u bytes", MAX_BODY);
      if (size == 0) break;
      conn_skip(c, (size_t)size);
      if (conn_line(c, line, sizeof line) != 0) die("chunk not followed by CRLF");
    }
    while (conn_line(c, line, sizeof line) != 0) { /* trailers */
    }
  } else if (content_length >= 0) {
    if (content_length > MAX_BODY) die("answer body larger than %u bytes", MAX_BODY);
    conn_skip(c, (size_t)content_length);
  } else {
    die("answer without Content-Length or chunked encoding");
  }
  return status;
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(void) {
  fputs("usage: apireplay --server https://HOST:PORT --ca CA.pem [--address IP] [--token-file FILE]\n"
        "                 [--cert CERT.pem --key KEY.pem] [--session FILE] REQUESTS\n",
        stderr);
  exit(2);
}

int main(int argc, char **argv) {
  const char *server = NULL, *ca = NULL, *address = NULL, *token_file = NULL, *cert = NULL, *key = NULL;
  const char *requests_path = NULL, *session_path = NULL;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char **slot = strcmp(a, "--server") == 0       ? &server
                        : strcmp(a, "--ca") == 0         ? &ca
                        : strcmp(a, "--address") == 0    ? &address
                        : strcmp(a, "--token-file") == 0 ? &token_file
                        : strcmp(a, "--cert") == 0       ? &cert
                        : strcmp(a, "--key") == 0        ? &key
                        : strcmp(a, "--session") == 0    ? &session_path
                                                         : NULL;
    if (slot) {
      if (i + 1 >= argc) usage();
      *slot = argv[++i];
    } else if (a[0] == '-' || requests_path) {
      usage();
    } else {
      requests_path = a;
    }
  }
  if (!server || !ca || !requests_path || (!cert != !key)) usage();

  /* https://HOST:PORT or https://[V6]:PORT, nothing after the port but an optional '/'. */
  if (strncmp(server, "https://", 8) != 0) die("the server must be an https:// URL");
  char host[256];
  const char *h = server + 8, *port_str;
  if (*h == '[') {
    const char *close_br = strchr(h, ']');
    if (!close_br || (size_t)(close_br - h - 1) >= sizeof host) die("bad server URL");
    memcpy(host, h + 1, (size_t)(close_br - h - 1));
    host[close_br - h - 1] = '\0';
    port_str = close_br[1] == ':' ? close_br + 2 : NULL;
  } else {
    const char *colon = strchr(h, ':');
    size_t l = colon ? (size_t)(colon - h) : strcspn(h, "/");
    if (l == 0 || l >= sizeof host) die("bad server URL");
    memcpy(host, h, l);
    host[l] = '\0';
    port_str = colon ? colon + 1 : NULL;
  }
  char *end;
  long port = port_str ? strtol(port_str, &end, 10) : 443;
  if (port_str && ((*end != '\0' && strcmp(end, "/") != 0) || end == port_str)) die("bad server URL port");
  if (port <= 0 || port > 65535) die("bad server URL port");
  char authority[300];
  snprintf(authority, sizeof authority, strchr(host, ':') ? "[%s]:%ld" : "%s:%ld", host, port);

  struct sockaddr_storage addr;
  memset(&addr, 0, sizeof addr);
  socklen_t addr_len;
  struct sockaddr_in *v4 = (struct sockaddr_in *)&addr;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&addr;
  int host_is_ip = inet_pton(AF_INET, host, &v4->sin_addr) == 1 || inet_pton(AF_INET6, host, &v6->sin6_addr) == 1;
  const char *connect_to = address ? address : host;
  if (!address && !host_is_ip) die("%s is a host name: pass --address", host);
  memset(&addr, 0, sizeof addr);
  if (inet_pton(AF_INET, connect_to, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((unsigned short)port);
    addr_len = sizeof *v4;
  } else if (inet_pton(AF_INET6, connect_to, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((unsigned short)port);
    addr_len = sizeof *v6;
  } else {
    die("--address %s is not an IP address", connect_to);
  }

  size_t text_len;
  char *text = read_file(requests_path, &text_len);
  size_t count;
  struct request *requests = parse_requests(text, text_len, &count);
  char *authorization = NULL;
  if (token_file) {
    size_t tl;
    char *token = read_file(token_file, &tl);
    while (tl > 0 && (token[tl - 1] == '\n' || token[tl - 1] == '\r' || token[tl - 1] == ' ')) token[--tl] = '\0';
    if (tl == 0 || strpbrk(token, "\r\n") != NULL) die("the token file holds no single-line token");
    authorization = xmalloc(tl + 32);
    snprintf(authorization, tl + 32, "Authorization: Bearer %s\r\n", token);
    OPENSSL_cleanse(token, tl);
    free(token);
  }

  if (OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ATEXIT, NULL) != 1) die("OPENSSL_init_ssl");
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) die("SSL_CTX_new");
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) die("cannot require TLS 1.2");
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  offered = load_session(session_path);
  if (offered)
    SSL_CTX_set_cert_verify_callback(ctx, verify_with_deferred_ca, (void *)ca);
  else if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
    die("cannot load the CA file %s", ca);
  if (cert) {
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) die("cannot load the client certificate %s", cert);
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) die("cannot load the client key %s", key);
    if (SSL_CTX_check_private_key(ctx) != 1) die("the client key does not match the client certificate");
  }

  int session_saved = !session_path;
  struct conn c = {.ssl = NULL, .fd = -1};
  conn_open(&c, ctx, &addr, addr_len, host, host_is_ip);
  for (size_t i = 0; i < count;) {
    if (!c.ssl) conn_open(&c, ctx, &addr, addr_len, host, host_is_ip);
    size_t end = i + 1; /* the requests [i, end) go out in one write */
    while (end < count && requests[end].pipelined) ++end;
    size_t cap = 0;
    for (size_t k = i; k < end; ++k)
      cap += strlen(requests[k].method) + strlen(requests[k].target) + strlen(authority) +
             strlen(requests[k].headers) + (authorization ? strlen(authorization) : 0) + requests[k].body_len + 128;
    char *msg = xmalloc(cap);
    size_t used = 0;
    for (size_t k = i; k < end; ++k) {
      const struct request *r = &requests[k];
      /* Content-Length on every request with a body or a method that carries one (as Beast does). */
      int with_length = r->body_len > 0 || strcmp(r->method, "POST") == 0 || strcmp(r->method, "PUT") == 0 ||
                        strcmp(r->method, "PATCH") == 0;
      char length[48] = "";
      if (with_length) snprintf(length, sizeof length, "Content-Length: %zu\r\n", r->body_len);
      int head = snprintf(msg + used, cap - used, "%s %s HTTP/1.1\r\nHost: %s\r\n%s%s%s\r\n", r->method, r->target,
                          authority, authorization ? authorization : "", r->headers, length);
      if (head < 0 || used + (size_t)head + r->body_len > cap) die("request %zu too large", k + 1);
      memcpy(msg + used + head, r->body, r->body_len);
      used += (size_t)head + r->body_len;
    }
    conn_write(&c, msg, used);
    free(msg);
    for (; i < end; ++i) {
      int keep_alive;
      int status = read_answer(&c, &keep_alive);
      if (status >= 400) die("request %zu (%s %s): HTTP status %d", i + 1, requests[i].method, requests[i].target, status);
      if (!session_saved) { /* a TLS 1.3 session arrives with the first answer */
        session_saved = 1;
        if (SSL_session_reused(c.ssl) != 1) save_session(session_path, c.ssl);
      }
      if (!keep_alive) {
        conn_close(&c);
        if (i + 1 < end) die("the server closed the connection in the middle of a pipelined batch");
      }
    }
  }
  conn_close(&c);
  SSL_SESSION_free(offered);
  SSL_CTX_free(ctx);
  for (size_t i = 0; i < count; ++i) {
    free(requests[i].target);
    free(requests[i].headers);
  }
  free(requests);
  free(text);
  free(authorization);
  return 0;
}
