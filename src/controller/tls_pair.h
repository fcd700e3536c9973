/*
 * tls_pair.h — for tests: a handshaken TLS pair over TCP on loopback, the
 * server's session on tls_io (with pki.c's certificate, as the API
 * serves it) and the client on GnuTLS's own transport, both ends
 * non-blocking as MHD's are.  Static functions: include it in one test.
 */
#ifndef WEFT_CONTROLLER_TLS_PAIR_H
#define WEFT_CONTROLLER_TLS_PAIR_H

#include "controller/pki.h"
#include "controller/tls_io.h"
#include "test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct pair {
	int sfd, cfd;
	gnutls_session_t srv, cli;
	gnutls_certificate_credentials_t scred, ccred;
	struct tls_io *io;
	struct pki pki;
};

static void pair_close(struct pair *p)
{
	if (p->srv)
		gnutls_deinit(p->srv);
	if (p->cli)
		gnutls_deinit(p->cli);
	tls_io_free(p->io);
	if (p->scred)
		gnutls_certificate_free_credentials(p->scred);
	if (p->ccred)
		gnutls_certificate_free_credentials(p->ccred);
	if (p->sfd >= 0)
		close(p->sfd);
	if (p->cfd >= 0)
		close(p->cfd);
	pki_free(&p->pki);
}

/* A connected TCP pair on loopback, both ends non-blocking (TCP, not a
 * socketpair: its writes stop part-way anywhere when the buffer fills). */
static int tcp_pair(int sv[2])
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	sv[0] = sv[1] = -1;
	if (l < 0)
		return -1;
	if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1) || getsockname(l, (struct sockaddr *)&sa, &len) ||
	    (sv[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(sv[1], (struct sockaddr *)&sa, sizeof(sa)) || (sv[0] = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0) {
		close(l);
		return -1;
	}
	close(l);
	for (int i = 0; i < 2; i++) {
		(void)setsockopt(sv[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (fcntl(sv[i], F_SETFL, fcntl(sv[i], F_GETFL) | O_NONBLOCK))
			return -1;
	}
	return 0;
}

/* A handshaken pair; sndbuf > 0 shrinks the server's socket buffer. */
static int pair_open(struct pair *p, int sndbuf)
{
	struct pki_config cfg = { .dir = test_tmpdir(), .listen_host = "127.0.0.1" };
	int sv[2] = { -1, -1 }, s = 1, c = 1;
	char err[256];

	memset(p, 0, sizeof(*p));
	p->sfd = p->cfd = -1;
	if (pki_load_or_create(&cfg, &p->pki, err, sizeof(err)))
		return -1;
	if (tcp_pair(sv))
		return -1;
	p->sfd = sv[0];
	p->cfd = sv[1];
	if (sndbuf > 0) {
		(void)setsockopt(p->sfd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		(void)setsockopt(p->cfd, SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof(sndbuf));
	}
	{
		gnutls_datum_t cert = { (unsigned char *)p->pki.cert_pem, (unsigned)p->pki.cert_len };
		gnutls_datum_t key = { (unsigned char *)p->pki.key_pem, (unsigned)p->pki.key_len };
		gnutls_datum_t ca = { (unsigned char *)p->pki.ca_pem, (unsigned)p->pki.ca_len };

		if (gnutls_certificate_allocate_credentials(&p->scred) < 0 ||
		    gnutls_certificate_set_x509_key_mem(p->scred, &cert, &key, GNUTLS_X509_FMT_PEM) < 0 ||
		    gnutls_certificate_allocate_credentials(&p->ccred) < 0 ||
		    gnutls_certificate_set_x509_trust_mem(p->ccred, &ca, GNUTLS_X509_FMT_PEM) <= 0)
			return -1;
	}
	if (gnutls_init(&p->srv, GNUTLS_SERVER | GNUTLS_NONBLOCK) < 0 || gnutls_set_default_priority(p->srv) < 0 ||
	    gnutls_credentials_set(p->srv, GNUTLS_CRD_CERTIFICATE, p->scred) < 0)
		return -1;
	if (gnutls_init(&p->cli, GNUTLS_CLIENT | GNUTLS_NONBLOCK) < 0 || gnutls_set_default_priority(p->cli) < 0 ||
	    gnutls_credentials_set(p->cli, GNUTLS_CRD_CERTIFICATE, p->ccred) < 0)
		return -1;
	gnutls_session_set_verify_cert(p->cli, "127.0.0.1", 0);
	gnutls_transport_set_int(p->cli, p->cfd);
	p->io = tls_io_attach(p->srv, p->sfd);
	if (!p->io)
		return -1;
	for (int i = 0; i < 1000 && (s || c); i++) {
		if (s && (s = gnutls_handshake(p->srv)) < 0 && gnutls_error_is_fatal(s))
			return -1;
		if (c && (c = gnutls_handshake(p->cli)) < 0 && gnutls_error_is_fatal(c))
			return -1;
	}
	return s || c ? -1 : 0;
}

#endif
