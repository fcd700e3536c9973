/*
 * flows.h — how `weftctl flows` (flows.c) prints one line of the
 * controller's flows stream (GET /apis/network.weft.io/v1/flows, one JSON
 * object a line), apart from the command so that a unit test can call it
 * without a controller.
 *
 * A line is one of these kinds:
 *   an event   {"seq":12,"time":"...Z","node":"node-1","verdict":"dropped",...}
 *              -> "18:00:00.123 node-1 dropped policy-denied-ingress TCP
 *                  x/a (10.128.0.2:37264) -> x/b (10.128.2.2:80) from pod"
 *   lost       {"node":"node-2","lost":12}
 *              -> "node-2: 12 events lost (the node's log moved past them)"
 *   an error   {"node":"node-2","error":"cannot reach ..."}
 *              -> "weftctl flows: node-2: cannot reach ..."
 *   a retry    {"node":"node-2","error":"...","retryInSeconds":2} (following:
 *              the relay reads the node again)
 *              -> "weftctl flows: node-2: ...; reading it again in 2 s"
 *   resumed    {"node":"node-2","resumed":true,"restarted":true}
 *              -> "weftctl flows: node-2: read again (its agent restarted:
 *                  a new log)"
 * and a line that is none of them (not JSON, or without the fields) is
 * unreadable: "weftctl flows: unreadable line: <its first 200 bytes>".
 *
 * Whatever the server sent, the text written has no control character
 * (each is written '?'), so a line cannot drive the terminal.
 */
#ifndef WEFT_CTL_FLOWS_H
#define WEFT_CTL_FLOWS_H

#include <stddef.h>

#define FLOWS_TEXT_MAX 4096		/* out's size that holds any line (longer text is cut) */
#define FLOWS_UNREADABLE_SHOWN 200	/* bytes of an unreadable line shown */

enum flows_line {
	FLOWS_EVENT,			/* print out on stdout */
	FLOWS_LOST,			/* print out on stdout */
	FLOWS_NODE_ERROR,		/* print out on stderr; the command will exit 1 */
	FLOWS_NODE_RETRY,		/* print out on stderr (the relay goes on) */
	FLOWS_NODE_RESUMED,		/* print out on stderr */
	FLOWS_UNREADABLE,		/* print out on stderr; skipped */
};

/* line (len bytes, without its newline) as weftctl prints it, into out
 * (outlen bytes, NUL-terminated, cut to fit, no newline); which kind of
 * line it is says where the text goes. */
enum flows_line flows_format_line(const char *line, size_t len, char *out, size_t outlen);

#endif
