/*
 * describe_netpol.c — what `weftctl describe networkpolicy` adds to the
 * object's fields: what the policy means in the cluster as it is now,
 * evaluated with model/netpol.h over the controller's Pods and Namespaces
 * (ctl/netview.h):
 *
 *   Now:
 *     Selects:          y/a, y/b
 *     Isolates:         ingress, egress
 *     Ingress rule 0:
 *       from[0]:        namespaces x; pods x/a, x/b, x/c
 *       from[1]:        ipBlock 10.0.0.0/16 except 10.0.1.0/24; pods z/a
 *       ports:          80/TCP, serve-80-tcp/TCP (y/a: 80, y/b: 8080)
 *     Egress:           no rule: every egress of the selected pods is denied
 *
 * A named port is resolved on each pod the policy selects for ingress
 * rules (the destination); for egress rules it depends on each
 * destination and is shown as its name.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl.h"
#include "ctl/netview.h"

#define WIDTH 18		/* "  Ingress rule 0:  " */
#define TEXT_MAX 8192

/* Append printf text to buf (cut at len, with "..." when it is). */
static void __attribute__((format(printf, 3, 4))) add(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 4 >= len)
		return;
	va_start(ap, fmt);
	if ((size_t)vsnprintf(buf + n, len - n, fmt, ap) >= len - n)
		memcpy(buf + len - 4, "...", 4);
	va_end(ap);
}

static void row(int indent, const char *key, const char *value)
{
	printf("%*s%s:%*s%s\n", indent, "", key, WIDTH - indent - (int)strlen(key), "", value[0] ? value : "<none>");
}

/* The pods of the view that peer p of np matches, as "pods a/b, ...". */
static void matching_pods(const struct netview *v, const struct netpol *np, const struct netpol_peer *p, char *buf,
			  size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < v->npods; i++) {
		if (!netpol_peer_matches_pod(np, p, &v->pods[i]))
			continue;
		add(buf, len, "%s%s/%s", n++ ? ", " : "pods ", v->pods[i].ns, v->pods[i].name);
	}
	if (!n)
		add(buf, len, "no pods now");
}

/* The namespaces a namespaceSelector matches, as "namespaces x, y; ". */
static void matching_namespaces(const struct netview *v, const struct netpol_peer *p, char *buf, size_t len)
{
	const char *ns;
	json_t *labels;
	size_t n = 0;

	json_object_foreach(v->ns_labels, ns, labels) {
		struct selector_view sv = { .field = { "", "", "" }, .labels = labels };

		if (selector_matches(&p->namespaces, &sv))
			add(buf, len, "%s%s", n++ ? ", " : "namespaces ", ns);
	}
	add(buf, len, "%s; ", n ? "" : "no namespaces now");
}

static void peer_line(const struct netview *v, const struct netpol *np, const struct netpol_peer *p,
		      const char *key)
{
	char text[TEXT_MAX] = "", c[CIDR_STRLEN];

	if (p->is_block) {
		cidr_format(&p->block, c);
		add(text, sizeof(text), "ipBlock %s", c);
		for (size_t i = 0; i < p->nexcept; i++) {
			cidr_format(&p->except[i], c);
			add(text, sizeof(text), "%s%s", i ? ", " : " except ", c);
		}
		add(text, sizeof(text), "; ");
	} else if (p->has_namespaces) {
		matching_namespaces(v, p, text, sizeof(text));
	} else {
		add(text, sizeof(text), "namespace %s; ", np->ns);
	}
	matching_pods(v, np, p, text, sizeof(text));
	row(4, key, text);
}

/* "80/TCP", "8000-8010/TCP", "all/UDP", "http/TCP (y/a: 80, y/b: none)" */
static void port_text(const struct netview *v, const struct netpol *np, enum netpol_dir d,
		      const struct netpol_port *p, char *buf, size_t len)
{
	const char *proto = netpol_proto_name(p->proto);
	size_t n = 0;

	if (!p->name[0] && !p->port) {
		add(buf, len, "every port/%s", proto);
		return;
	}
	if (!p->name[0]) {
		if (p->end_port != p->port)
			add(buf, len, "%u-%u/%s", p->port, p->end_port, proto);
		else
			add(buf, len, "%u/%s", p->port, proto);
		return;
	}
	add(buf, len, "%s/%s", p->name, proto);
	if (d != NETPOL_INGRESS)
		return;
	for (size_t i = 0; i < v->npods; i++) {
		uint16_t lo, hi;

		if (!netpol_selects(np, v->pods[i].ns, v->pods[i].labels))
			continue;
		if (netpol_port_range(p, &v->pods[i], &lo, &hi) == 0)
			add(buf, len, "%s%s/%s: %u", n++ ? ", " : " (", v->pods[i].ns, v->pods[i].name, lo);
		else
			add(buf, len, "%s%s/%s: none", n++ ? ", " : " (", v->pods[i].ns, v->pods[i].name);
	}
	if (n)
		add(buf, len, ")");
}

static void rules(const struct netview *v, const struct netpol *np, enum netpol_dir d)
{
	const char *title = d == NETPOL_INGRESS ? "Ingress" : "Egress";
	const char *peers = d == NETPOL_INGRESS ? "from" : "to";
	char key[64], text[TEXT_MAX];

	if (!np->isolates[d]) {
		row(2, title, "not isolated by this policy");
		return;
	}
	if (!np->nrules[d]) {
		snprintf(text, sizeof(text), "no rule: this policy allows no %s of the pods it selects",
			 netpol_dir_name(d));
		row(2, title, text);
		return;
	}
	for (size_t r = 0; r < np->nrules[d]; r++) {
		const struct netpol_rule *rule = &np->rules[d][r];

		printf("  %s rule %zu:\n", title, r);
		if (!rule->npeers)
			row(4, peers, "every peer");
		for (size_t i = 0; i < rule->npeers; i++) {
			snprintf(key, sizeof(key), "%s[%zu]", peers, i);
			peer_line(v, np, &rule->peers[i], key);
		}
		text[0] = 0;
		for (size_t i = 0; i < rule->nports; i++) {
			if (i)
				add(text, sizeof(text), ", ");
			port_text(v, np, d, &rule->ports[i], text, sizeof(text));
		}
		row(4, "ports", rule->nports ? text : "every port of every protocol");
	}
}

void ctl_describe_networkpolicy(struct ctl *ctl, const json_t *obj)
{
	struct netview v = { 0 };
	struct netpol np = { 0 };
	char err[512], text[TEXT_MAX] = "";
	size_t n = 0;

	printf("Now:\n");
	if (netpol_parse(obj, &np, err, sizeof(err))) {
		row(2, "Error", err);
		return;
	}
	if (netview_load(ctl, &v, false)) {
		row(2, "Error", "cannot list the pods and namespaces (above)");
		goto out;
	}
	for (size_t i = 0; i < v.npods; i++)
		if (netpol_selects(&np, v.pods[i].ns, v.pods[i].labels))
			add(text, sizeof(text), "%s%s/%s", n++ ? ", " : "", v.pods[i].ns, v.pods[i].name);
	row(2, "Selects", n ? text : "no pods now");
	snprintf(text, sizeof(text), "%s%s%s", np.isolates[NETPOL_INGRESS] ? "ingress" : "",
		 np.isolates[NETPOL_INGRESS] && np.isolates[NETPOL_EGRESS] ? ", " : "",
		 np.isolates[NETPOL_EGRESS] ? "egress" : "");
	row(2, "Isolates", text);
	rules(&v, &np, NETPOL_INGRESS);
	rules(&v, &np, NETPOL_EGRESS);
out:
	netview_free(&v);
	netpol_free(&np);
}
