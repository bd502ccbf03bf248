package observe

import "testing"

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`key = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"`, `key = "[redacted]"`},
		{`client(api_key="abc123def")`, `client(api_key=[redacted])`},
		{`headers = {"Authorization": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz"}`, `headers = {"Authorization": [redacted]}`},
		{`PASSWORD: hunter2`, `PASSWORD: [redacted]`},
		{`id = "AKIAIOSFODNN7EXAMPLE"`, `id = "[redacted]"`},
		{`g = "ghp_0123456789abcdefghijABCDEFGHIJ0123456789"`, `g = "[redacted]"`},
		{"pem = '''-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----'''", "pem = '''[redacted]'''"},
		// Nothing that looks like a credential: left as it is.
		{`for i in range(10): print(token_count(i))`, `for i in range(10): print(token_count(i))`},
		{`total = sum(x["amount"] for x in rows)`, `total = sum(x["amount"] for x in rows)`},
	} {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
