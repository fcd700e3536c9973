/*
 * lb_priv.h — what the load-balancer model's files share (lb_translate.c
 * builds the objects, lb_pool.c finds a pool's members, lb_cert.c turns a
 * Secret or a Route's TLS into a key/certificate object).  Not for use
 * outside src/model/lb_*.c.
 */
#ifndef WEFT_MODEL_LB_PRIV_H
#define WEFT_MODEL_LB_PRIV_H

#include "model/lb.h"

/* A pool's members: servers [{ip, port}] (new, sorted, unique; the
 * caller owns it) and the Service port number the backend meant. */
struct lb_members {
	json_t *servers;
	json_int_t service_port;
};

/* The members behind ns/service for an Ingress backend's service.port
 * (route false) or a Route's spec.port (route true, may be NULL).  0 (no
 * such Service: no members), -EINVAL with the reason in err (the port
 * cannot be resolved), or -ENOMEM.  m->servers is set in every case. */
int lb_pool_members(const struct lb_config *cfg, const struct lb_inputs *in, const char *ns,
		    const char *service, const json_t *port, bool route, struct lb_members *m,
		    char *err, size_t errlen);

/* A key/certificate object named name, from a TLS Secret ns/secret
 * (ingress) or from a Route's spec.tls (route != NULL).  NULL with a
 * reason ("SecretNotFound", "SecretInvalid", "CertificateMissing") and a
 * message when there is none. */
json_t *lb_cert_object(const struct lb_config *cfg, const struct lb_inputs *in, const char *name,
		       const char *ns, const char *secret, const json_t *route,
		       const char **reason, char *msg, size_t msglen);

#endif
