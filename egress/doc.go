// Package egress is the host side of an opt-in network allowlist for
// sandboxed code: an HTTP proxy (CONNECT and plain HTTP forwarding) that
// lets code reach the hosts a [Policy] names and nothing else.
//
// The sandbox still has no route anywhere; the proxy is reached through
// what the sandbox already has (the backends pass it a connection), and
// code gets the usual proxy variables, so urllib, http.client and common
// libraries work unchanged. For each connection the proxy:
//
//   - matches the requested host and port against the allowlist (exact
//     names and *.suffix wildcards, each with its port; never a bare IP
//     range unless the policy names it);
//   - resolves the name itself and refuses, unless the policy names the
//     address explicitly ([Policy.AllowAddresses]), any address that is
//     loopback, private, link-local, unique-local, multicast, unspecified,
//     carrier-grade NAT, a cloud metadata address, or one of the host's
//     own;
//   - connects to the address it checked, never resolving again, so a
//     name that changes its address between the check and the connection
//     (DNS rebinding) cannot redirect it;
//   - bounds what one client may use: connections at once, bytes in both
//     directions and each connection's duration;
//   - never follows a redirect: the client sees it and asks again, and the
//     new request is checked like the first;
//   - logs every connection allowed and refused, with the host, the port,
//     the bytes and the reason.
//
// A refusal is an HTTP 403 whose reason names the host and why, which
// Python's urllib shows in its error ("Tunnel connection failed: 403 ...").
package egress
