/*
 * names.c — Kubernetes' name rules: DNS-1123 labels and subdomains,
 * DNS-1035 labels, label keys and values, IANA service (port) names, and
 * host names with an optional leading wildcard label.
 *
 * Object names follow Kubernetes exactly: Namespaces are DNS-1123 labels
 * and Services DNS-1035 labels (63 bytes), most other kinds DNS-1123
 * subdomains (253 bytes, no bound on one label: IsDNS1123Subdomain).  Host
 * names (Ingress and Route hosts) are stricter: each label at most 63
 * bytes, or DNS could not resolve them.
 *
 * Every check bounds its input by length before looking further, so a
 * megabyte-long string costs at most a strnlen of the limit.
 */
#include "model/model.h"
#include "model/validate.h"

#include <string.h>

static bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
static bool alnum(char c) { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n) */
static bool label(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool model_key_chars(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!(alnum(c) || c == '-' || c == '.' || c == '_'))
			return false;
	}
	return true;
}

bool model_dns1123_label(const char *s)
{
	return s && label(s, strnlen(s, 64));
}

bool model_dns1035_label(const char *s)
{
	return model_dns1123_label(s) && s[0] >= 'a' && s[0] <= 'z';
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? without label()'s 63-byte bound */
static bool long_label(const char *s, size_t n)
{
	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

/* Labels joined by '.', at most 253 bytes.  Kubernetes' IsDNS1123Subdomain
 * does not bound a label on its own (a 253-byte Pod name of one label is
 * valid); a host name does (dns_labels: 63, as DNS). */
static bool labels(const char *s, size_t n, bool dns_labels)
{
	size_t start = 0;

	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (!(dns_labels ? label : long_label)(s + start, i - start))
				return false;
			start = i + 1;
		}
	}
	return true;
}

static bool subdomain(const char *s, size_t n)
{
	return labels(s, n, false);
}

bool model_dns1123_subdomain(const char *s)
{
	return s && subdomain(s, strnlen(s, 254));
}

bool model_dns_host(const char *s, bool wildcard)
{
	if (!s)
		return false;
	if (wildcard && s[0] == '*' && s[1] == '.')
		s += 2;
	return labels(s, strnlen(s, 254), true);
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63, over s[0..n) */
static bool qualified_name(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

bool model_label_key(const char *s)
{
	const char *slash;
	size_t n;

	if (!s)
		return false;
	n = strnlen(s, 253 + 1 + 63 + 1);
	if (n > 253 + 1 + 63)
		return false;
	slash = memchr(s, '/', n);
	if (!slash)
		return qualified_name(s, n);
	return subdomain(s, (size_t)(slash - s)) &&
	       qualified_name(slash + 1, n - (size_t)(slash - s) - 1);
}

bool model_label_value(const char *s)
{
	size_t n;

	if (!s)
		return false;
	n = strnlen(s, 64);
	return n == 0 || qualified_name(s, n);
}

bool model_iana_svc_name(const char *s)
{
	bool letter = false;
	size_t n;

	if (!s)
		return false;
	n = strnlen(s, 16);
	if (n == 0 || n > 15 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] >= 'a' && s[i] <= 'z')
			letter = true;
		else if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
			return false;
		if (s[i] == '-' && i > 0 && s[i - 1] == '-')
			return false;
	}
	return letter;
}
