package wsproto_test

import (
	"fmt"
	"time"

	"github.com/adk-codemode/codemode/internal/protocol/wsproto"
)

// A host signs a fresh token per connection; the server verifies it once.
func ExampleSign() {
	secret := []byte("a-secret-of-at-least-16-bytes")
	tok := wsproto.Sign(secret, wsproto.Token{Session: "turn-42", Expires: time.Now().Add(5 * time.Minute)})

	v := &wsproto.Verifier{Secret: secret}
	session, err := v.Verify("Bearer " + tok)
	fmt.Println(session, err)
	_, err = v.Verify("Bearer " + tok)
	fmt.Println(err)
	// Output:
	// turn-42 <nil>
	// the token was used before; sign a fresh one for each connection
}
