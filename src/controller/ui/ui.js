/*
 * ui.js — the cluster page (docs/ui.md).  It reads the API as any client
 * does, with the bearer token the user gives (kept in this tab's
 * sessionStorage; a "#token=..." fragment is taken and removed from the
 * address): for each kind a list, then a watch from the list's
 * resourceVersion, applied event by event (a 410 Gone lists again); and
 * the flows relay's drops as they happen.  Each change schedules one
 * render of the whole page on the next animation frame.  Nothing is
 * fetched from anywhere but the page's own origin (the controller's
 * Content-Security-Policy says so too).
 *
 * What the page shows carries data-* attributes (data-node, data-pod,
 * data-namespace, data-service, data-from/data-to, data-drop) so that a
 * test can read it back and compare it with the API.
 */
"use strict";

const KINDS = {
	clusternetworks: "/apis/network.openshift.io/v1/clusternetworks",
	nodes: "/api/v1/nodes",
	hostsubnets: "/apis/network.openshift.io/v1/hostsubnets",
	namespaces: "/api/v1/namespaces",
	netnamespaces: "/apis/network.openshift.io/v1/netnamespaces",
	pods: "/api/v1/pods",
	services: "/api/v1/services",
	endpointslices: "/apis/discovery.k8s.io/v1/endpointslices",
	networkpolicies: "/apis/networking.k8s.io/v1/networkpolicies",
};
const DROPS_KEPT = 50;

const state = { token: null, objs: {}, listed: {}, drops: [], dropsNote: "", stopped: false };
for (const k of Object.keys(KINDS)) state.objs[k] = new Map();

const $ = (sel) => document.querySelector(sel);

function el(tag, attrs, ...children) {
	const e = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs || {}))
		if (v !== undefined && v !== null) e.setAttribute(k, String(v));
	for (const c of children)
		e.append(c instanceof Node ? c : document.createTextNode(c === undefined || c === null ? "" : String(c)));
	return e;
}

function key(o) {
	const m = o.metadata || {};
	return m.namespace ? m.namespace + "/" + m.name : m.name;
}

/* ------------------------------------------------------------ the API */

async function api(path, init) {
	const r = await fetch(path, Object.assign({ headers: { Authorization: "Bearer " + state.token, Accept: "application/json" } }, init || {}));
	if (r.status === 401 || r.status === 403) {
		const e = new Error("the API refused the token (" + r.status + ")");
		e.auth = true;
		throw e;
	}
	return r;
}

/* each complete line of a streamed response, as it comes */
async function lines(resp, onLine) {
	const reader = resp.body.getReader();
	const dec = new TextDecoder();
	let buf = "";
	for (;;) {
		const { value, done } = await reader.read();
		if (done) break;
		buf += dec.decode(value, { stream: true });
		let nl;
		while ((nl = buf.indexOf("\n")) >= 0) {
			const line = buf.slice(0, nl).trim();
			buf = buf.slice(nl + 1);
			if (line) onLine(line);
		}
		if (state.stopped) { reader.cancel(); return; }
	}
}

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

/* list, then watch from the list's revision; again after an error */
async function follow(kind) {
	const path = KINDS[kind], objs = state.objs[kind];
	while (!state.stopped) {
		try {
			const r = await api(path);
			if (!r.ok) throw new Error(path + ": HTTP " + r.status);
			const list = await r.json();
			objs.clear();
			for (const o of list.items || []) objs.set(key(o), o);
			state.listed[kind] = true;
			render();
			let rv = list.metadata.resourceVersion, gone = false;
			while (!state.stopped && !gone) {
				const w = await api(path + "?watch=true&allowWatchBookmarks=true&resourceVersion=" + encodeURIComponent(rv));
				if (!w.ok) throw new Error(path + " watch: HTTP " + w.status);
				await lines(w, (line) => {
					const ev = JSON.parse(line), o = ev.object || {};
					if (ev.type === "ERROR") { gone = true; return; }	/* 410: list again */
					if (o.metadata && o.metadata.resourceVersion) rv = o.metadata.resourceVersion;
					if (ev.type === "ADDED" || ev.type === "MODIFIED") objs.set(key(o), o);
					else if (ev.type === "DELETED") objs.delete(key(o));
					if (ev.type !== "BOOKMARK") render();
				});
			}
		} catch (e) {
			if (e.auth) return signOut(e.message);
			await sleep(1000);
		}
	}
}

/* the relay's drops as they happen (docs/trace.md, "Flows") */
async function followDrops() {
	while (!state.stopped) {
		try {
			const r = await api("/apis/network.weft.io/v1/flows?follow=true&verdict=dropped");
			if (!r.ok) {
				const st = await r.json().catch(() => ({}));
				state.dropsNote = "not followed: " + (st.message || "HTTP " + r.status);
				render();
				await sleep(5000);
				continue;
			}
			const followed = "followed: every node's drops, the newest first (the last " + DROPS_KEPT + ")";
			state.dropsNote = followed;
			render();
			await lines(r, (line) => {
				const ev = JSON.parse(line);
				if (ev.error)
					state.dropsNote = ev.node + ": " + ev.error +
						(ev.retryInSeconds ? "; reading it again in " + ev.retryInSeconds + " s" : "");
				if (ev.resumed)
					state.dropsNote = followed + "; " + ev.node + " read again" +
						(ev.restarted ? " (its agent restarted)" : "");
				if (ev.event !== "drop") {
					if (ev.error || ev.resumed) render();
					return;
				}
				/* newest first by the time its node stamped: each node's kept
				 * events arrive together, one node after another */
				let i = 0;
				while (i < state.drops.length && state.drops[i].time > ev.time) i++;
				state.drops.splice(i, 0, ev);
				state.drops.length = Math.min(state.drops.length, DROPS_KEPT);
				render();
			});
		} catch (e) {
			if (e.auth) {	/* the flows are the admin's: the rest of the page may still be this token's */
				state.dropsNote = "not followed: " + e.message;
				render();
				return;
			}
			await sleep(2000);
		}
	}
}

/* ------------------------------------------------------------ the model */

function mode() {
	const cn = [...state.objs.clusternetworks.values()][0] || {};
	return cn.mode || cn.pluginName || "";
}

function netid(ns) {
	const n = state.objs.netnamespaces.get(ns);
	return n && typeof n.netid === "number" ? n.netid : null;
}

function labelsMatch(sel, labels) {
	if (!sel) return true;
	if (sel.matchExpressions && sel.matchExpressions.length) return null;	/* not judged here: "some" */
	for (const [k, v] of Object.entries(sel.matchLabels || {}))
		if ((labels || {})[k] !== v) return false;
	return true;
}

/* Does peer (a from/to entry of a rule in namespace home) admit pods of
 * namespace ns?  true, false, or null: some of them. */
function peerAdmits(peer, home, ns) {
	if (peer.ipBlock) return false;
	const nsObj = state.objs.namespaces.get(ns) || { metadata: { labels: {} } };
	let inNs;
	if (peer.namespaceSelector) inNs = labelsMatch(peer.namespaceSelector, nsObj.metadata.labels);
	else inNs = ns === home;
	if (inNs === false) return false;
	const podSel = peer.podSelector;
	const allPods = !podSel || (!Object.keys(podSel.matchLabels || {}).length && !(podSel.matchExpressions || []).length);
	return inNs === true && allPods ? true : null;
}

/* How the rules of direction dir ("ingress"/"egress") of the policies of
 * namespace home that isolate that direction treat namespace other:
 * "all", "some" or "none". */
function policyVerdict(home, other, dir) {
	const field = dir === "ingress" ? "from" : "to";
	let isolating = 0, all = false, some = false;
	for (const p of state.objs.networkpolicies.values()) {
		if (p.metadata.namespace !== home) continue;
		const spec = p.spec || {};
		const types = spec.policyTypes || (dir === "ingress" ? ["Ingress"] : (spec.egress ? ["Egress"] : []));
		if (!types.map((t) => t.toLowerCase()).includes(dir)) continue;
		isolating++;
		const selAll = !spec.podSelector || (!Object.keys(spec.podSelector.matchLabels || {}).length &&
			!(spec.podSelector.matchExpressions || []).length);
		if (!selAll) some = true;	/* other pods of home are not isolated */
		for (const rule of spec[dir] || []) {
			const peers = rule[field];
			const ports = rule.ports && rule.ports.length;
			if (!peers || !peers.length) { if (ports) some = true; else all = true; continue; }
			for (const peer of peers) {
				const a = peerAdmits(peer, home, other);
				if (a === true && !ports) all = true;
				else if (a !== false) some = true;
			}
		}
	}
	if (!isolating || all) return "all";
	return some ? "some" : "none";
}

/* namespace a -> namespace b: [class, text] */
function reach(a, b) {
	if (mode() === "multitenant") {
		const x = netid(a), y = netid(b);
		if (x !== null && y !== null && x !== y && x !== 0 && y !== 0)
			return ["none", "none (tenants " + x + ", " + y + ")"];
	}
	const out = policyVerdict(a, b, "egress"), inn = policyVerdict(b, a, "ingress");
	if (out === "none") return ["none", "none (egress policy)"];
	if (inn === "none") return ["none", "none (ingress policy)"];
	if (out === "all" && inn === "all") return ["all", "all"];
	return ["some", "some (policy)"];
}

/* ------------------------------------------------------------ rendering */

let pending = false;
function render() {
	if (pending) return;
	pending = true;
	requestAnimationFrame(() => { pending = false; draw(); });
}

function nodeAddress(n) {
	const a = ((n.status || {}).addresses || []).find((x) => x.type === "InternalIP");
	return a ? a.address : "";
}

function dropsOf(n) {
	try {
		const d = JSON.parse(((n.metadata || {}).annotations || {})["weft.io/drops"] || "{}");
		return Object.values(d).reduce((s, v) => s + (Number(v) || 0), 0);
	} catch (e) { return ""; }
}

function fill(tbody, rows) {
	tbody.replaceChildren(...rows);
}

function draw() {
	const objs = state.objs, m = mode();
	$("#mode").textContent = m ? m + " mode" : "";
	const ready = Object.keys(KINDS).every((k) => state.listed[k]);
	$("#state").textContent = ready ? "up to date, following the API" : "reading the API…";
	$("#state").dataset.state = ready ? "ready" : "loading";
	document.title = ready ? "weft: " + objs.nodes.size + " nodes, " + objs.pods.size + " pods" : "weft";

	const subnetOf = new Map([...objs.hostsubnets.values()].map((h) => [h.host, h.subnet]));
	const podsOn = new Map();
	for (const p of objs.pods.values()) {
		const n = (p.spec || {}).nodeName || "";
		podsOn.set(n, (podsOn.get(n) || 0) + 1);
	}
	fill($("#nodes tbody"), [...objs.nodes.values()].sort((a, b) => key(a).localeCompare(key(b))).map((n) =>
		el("tr", { "data-node": key(n) }, el("td", {}, key(n)), el("td", { class: "ip" }, nodeAddress(n)),
			el("td", { class: "subnet" }, subnetOf.get(key(n)) || ""), el("td", { class: "pods" }, podsOn.get(key(n)) || 0),
			el("td", { class: "drops" }, dropsOf(n)))));

	const byNs = new Map();
	for (const p of objs.pods.values()) {
		const ns = p.metadata.namespace;
		if (!byNs.has(ns)) byNs.set(ns, []);
		byNs.get(ns).push(p);
	}
	const names = [...new Set([...objs.namespaces.keys(), ...byNs.keys()])].sort();
	$("#namespaces .list").replaceChildren(...names.map((ns) => {
		const id = netid(ns), pods = (byNs.get(ns) || []).sort((a, b) => key(a).localeCompare(key(b)));
		return el("div", { "data-namespace": ns, "data-vnid": id === null ? "" : id },
			el("h3", {}, ns + " ", el("span", { class: "tenant" }, id === null ? "" : "VNID " + id + (id === 0 ? " (global)" : ""))),
			pods.length ? el("table", {}, el("tbody", {}, ...pods.map((p) =>
				el("tr", { "data-pod": key(p) }, el("td", {}, p.metadata.name), el("td", { class: "ip" }, (p.status || {}).podIP || ""),
					el("td", { class: "node" }, (p.spec || {}).nodeName || ""))))) : el("p", { class: "note" }, "no pods"));
	}));

	const backends = new Map();
	for (const s of objs.endpointslices.values()) {
		const svc = ((s.metadata || {}).labels || {})["kubernetes.io/service-name"];
		if (!svc) continue;
		const k = s.metadata.namespace + "/" + svc;
		if (!backends.has(k)) backends.set(k, []);
		for (const e of s.endpoints || [])
			for (const a of e.addresses || [])
				if (!e.conditions || e.conditions.ready !== false) backends.get(k).push(a);
	}
	fill($("#services tbody"), [...objs.services.values()].sort((a, b) => key(a).localeCompare(key(b))).map((s) => {
		const spec = s.spec || {}, b = (backends.get(key(s)) || []).sort();
		return el("tr", { "data-service": key(s) }, el("td", {}, key(s)), el("td", { class: "cluster-ip" }, spec.clusterIP || ""),
			el("td", { class: "ports" }, (spec.ports || []).map((p) => p.port + "/" + (p.protocol || "TCP")).join(" ")),
			el("td", { class: "backends" }, b.length ? b.join(" ") : "none"));
	}));

	const nss = [...objs.namespaces.keys()].sort();
	$("#reach thead").replaceChildren(el("tr", {}, el("th", {}, "from \\ to"), ...nss.map((n) => el("th", { scope: "col" }, n))));
	fill($("#reach tbody"), nss.map((a) => el("tr", {}, el("th", { scope: "row" }, a), ...nss.map((b) => {
		const [cls, text] = reach(a, b);
		return el("td", { class: "reach-" + cls, "data-from": a, "data-to": b, "data-reach": cls }, text);
	}))));

	$("#drops-state").textContent = state.dropsNote;
	const end = (e) => (e.pod ? e.pod + " " : "") + e.ip + (e.port ? ":" + e.port : "");
	fill($("#drops tbody"), state.drops.map((d) => el("tr", { "data-drop": d.reason },
		el("td", {}, (d.time || "").slice(11, 23)), el("td", {}, d.node), el("td", { class: "reason" }, d.reason),
		el("td", {}, d.protocol), el("td", {}, end(d.source || {})), el("td", {}, end(d.destination || {})))));
}

/* ------------------------------------------------------------ signing in */

function signOut(why) {
	state.stopped = true;
	sessionStorage.removeItem("weft-token");
	$("#cluster").hidden = true;
	$("#logout").hidden = true;
	$("#login").hidden = false;
	$("#state").textContent = "signed out";
	$("#state").dataset.state = "login";
	$("#login-error").textContent = why || "";
}

function start(token) {
	state.token = token;
	state.stopped = false;
	sessionStorage.setItem("weft-token", token);
	$("#login").hidden = true;
	$("#cluster").hidden = false;
	$("#logout").hidden = false;
	render();
	for (const k of Object.keys(KINDS)) follow(k);
	followDrops();
}

document.addEventListener("DOMContentLoaded", () => {
	const m = location.hash.match(/^#token=(.+)$/);
	if (m) {
		sessionStorage.setItem("weft-token", decodeURIComponent(m[1]));
		history.replaceState(null, "", location.pathname);	/* the token leaves the address bar */
	}
	$("#login").addEventListener("submit", (ev) => {
		ev.preventDefault();
		const t = $("#token").value.trim();
		$("#token").value = "";
		if (t) start(t);
	});
	$("#logout").addEventListener("click", () => { signOut(""); location.reload(); });
	const t = sessionStorage.getItem("weft-token");
	if (t) start(t); else signOut("");
});
