// cnitool — the reference CNI client, for tests.
//
// Debian's golang-github-appc-cni-dev ships libcni 1.1.2 without the
// upstream cnitool command, so this is a small main with the same
// interface and the same use of libcni (built by scripts/cnitool.sh):
//
//	cnitool add|check|del <network name> <netns path>
//
//	NETCONFPATH  directory of *.conf/*.conflist/*.json (default /etc/cni/net.d);
//	             the network is found by its "name"
//	CNI_PATH     plugin directories, ':'-separated
//	CAP_ARGS     capability args as JSON, e.g. {"portMappings":[...]}
//	CNI_ARGS     "K=V;K=V" runtime args (K8S_POD_NAMESPACE=...;K8S_POD_NAME=...)
//	CNI_IFNAME   interface name in the container (default eth0)
//
// The container ID is "cnitool-" + the first 10 bytes of sha512(abs netns
// path) in hex, as upstream does, so add/check/del of one netns agree.
// Results and configs are cached by libcni under /var/lib/cni (its default).
package main

import (
	"context"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

func usage() {
	exe := filepath.Base(os.Args[0])
	fmt.Fprintf(os.Stderr, "%s: add, check or remove network interfaces of a network namespace\n", exe)
	fmt.Fprintf(os.Stderr, "  %s add   <net> <netns>\n", exe)
	fmt.Fprintf(os.Stderr, "  %s check <net> <netns>\n", exe)
	fmt.Fprintf(os.Stderr, "  %s del   <net> <netns>\n", exe)
	os.Exit(1)
}

func fail(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s\n", err)
		os.Exit(1)
	}
}

// parseCNIArgs splits "K=V;K=V" the way upstream cnitool does: every pair
// must have exactly one '=' and non-empty key and value.
func parseCNIArgs(s string) ([][2]string, error) {
	var out [][2]string
	for _, pair := range strings.Split(s, ";") {
		kv := strings.Split(pair, "=")
		if len(kv) != 2 || kv[0] == "" || kv[1] == "" {
			return nil, fmt.Errorf("invalid CNI_ARGS pair %q", pair)
		}
		out = append(out, [2]string{kv[0], kv[1]})
	}
	return out, nil
}

func main() {
	if len(os.Args) < 4 {
		usage()
	}
	cmd, netName, netns := os.Args[1], os.Args[2], os.Args[3]
	if cmd != "add" && cmd != "check" && cmd != "del" {
		usage()
	}

	netdir := os.Getenv("NETCONFPATH")
	if netdir == "" {
		netdir = "/etc/cni/net.d"
	}
	list, err := libcni.LoadConfList(netdir, netName)
	fail(err)

	var capArgs map[string]interface{}
	if v := os.Getenv("CAP_ARGS"); v != "" {
		fail(json.Unmarshal([]byte(v), &capArgs))
	}

	var cniArgs [][2]string
	if v := os.Getenv("CNI_ARGS"); v != "" {
		cniArgs, err = parseCNIArgs(v)
		fail(err)
	}

	ifName, ok := os.LookupEnv("CNI_IFNAME")
	if !ok {
		ifName = "eth0"
	}

	netns, err = filepath.Abs(netns)
	fail(err)
	sum := sha512.Sum512([]byte(netns))

	rt := &libcni.RuntimeConf{
		ContainerID:    fmt.Sprintf("cnitool-%x", sum[:10]),
		NetNS:          netns,
		IfName:         ifName,
		Args:           cniArgs,
		CapabilityArgs: capArgs,
	}
	cninet := libcni.NewCNIConfig(filepath.SplitList(os.Getenv("CNI_PATH")), nil)
	ctx := context.TODO()

	switch cmd {
	case "add":
		res, err := cninet.AddNetworkList(ctx, list, rt)
		if res != nil {
			_ = res.Print()
		}
		fail(err)
	case "check":
		fail(cninet.CheckNetworkList(ctx, list, rt))
	case "del":
		fail(cninet.DelNetworkList(ctx, list, rt))
	}
}
