package loopback

import (
	"errors"
	"net"
	"testing"
)

func TestNames(t *testing.T) {
	r := Names("API.test", " b.test. ", "")
	for _, host := range []string{"api.test", "API.TEST.", "b.test"} {
		a, err := r.LookupNetIP(t.Context(), "ip", host)
		if err != nil || len(a) != 1 || a[0].String() != "127.0.0.1" {
			t.Errorf("LookupNetIP(%q) = %v, %v; want 127.0.0.1", host, a, err)
		}
	}
	var dnsErr *net.DNSError
	if a, err := r.LookupNetIP(t.Context(), "ip", "other.test"); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound || len(a) != 0 {
		t.Errorf("LookupNetIP of a name it does not hold = %v, %v; want not found", a, err)
	}
	if len(r) != 2 {
		t.Errorf("Names kept %v; want the two names, lower case, without the dot", r)
	}
}
