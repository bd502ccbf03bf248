package egressrelay

import (
	"strconv"
	"time"
)

// Defaults of a relay: the loopback port the code's proxy variables name,
// the most connections relayed at once, and how long one past them waits
// for a slot.
const (
	DefaultPort     = 3128
	DefaultMaxConns = 64
	DefaultSlotWait = 2 * time.Second
)

// ProxyEnv is the environment that points the code's HTTP clients at a
// relay on 127.0.0.1:port: http_proxy, https_proxy and their upper-case
// forms, with no_proxy empty so that no host goes around it.
func ProxyEnv(port int) []string {
	proxy := "http://127.0.0.1:" + strconv.Itoa(port)
	return []string{"http_proxy=" + proxy, "https_proxy=" + proxy, "HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "no_proxy=", "NO_PROXY="}
}
