package schema

import (
	"regexp"
	"time"

	"github.com/dlclark/regexp2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ecmaMatchTimeout bounds one match of a pattern that only the ECMA-262
// engine accepts. Such an engine backtracks, and both the pattern (from a
// tool's declaration) and the string (from the sandbox) may be hostile. A
// match that runs out of time counts as no match, so the argument is
// rejected rather than let through unchecked.
const ecmaMatchTimeout = 50 * time.Millisecond

// compileRegexp is the regular expression engine of argument validation.
// JSON Schema patterns are ECMA-262 regular expressions. A pattern Go's RE2
// accepts is matched by RE2, in linear time; one it rejects (lookaround,
// backreferences, \cX and other ECMA-only syntax) is compiled in
// ECMAScript mode by github.com/dlclark/regexp2, each match bounded by
// ecmaMatchTimeout.
func compileRegexp(s string) (jsonschema.Regexp, error) {
	if re, err := regexp.Compile(s); err == nil {
		return re, nil
	}
	re, err := regexp2.Compile(s, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = ecmaMatchTimeout
	return ecmaRegexp{re}, nil
}

type ecmaRegexp struct{ re *regexp2.Regexp }

func (e ecmaRegexp) MatchString(s string) bool {
	ok, err := e.re.MatchString(s)
	return err == nil && ok
}

func (e ecmaRegexp) String() string { return e.re.String() }
