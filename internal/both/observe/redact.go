package observe

import (
	"regexp"
	"strings"
)

// secretPatterns match values that look like credentials: a value given
// to a key whose name says it is secret, an Authorization header's
// credentials, and the shapes of well-known tokens (cloud and code-host
// keys, JSON web tokens, PEM private keys).
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)((?:api[_-]?key|apikey|access[_-]?key|secret|token|passw(?:or)?d|pwd|credentials?|auth)[A-Za-z0-9_-]*["']?\s*[:=]\s*)("[^"\n]*"|'[^'\n]*'|[^\s,;)}\]]+)`),
	regexp.MustCompile(`(?i)(\b(?:bearer|basic)\s+)([A-Za-z0-9._~+/=-]{8,})`),
	regexp.MustCompile(`()\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
	regexp.MustCompile(`()\bAIza[0-9A-Za-z_-]{35}\b`),
	regexp.MustCompile(`()\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b`),
	regexp.MustCompile(`()\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b`),
	regexp.MustCompile(`()\bxox[abprs]-[A-Za-z0-9-]{10,}\b`),
	regexp.MustCompile(`()\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b`),
	regexp.MustCompile(`()-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`),
}

// Redacted replaces each value [Redact] takes out.
const Redacted = "[redacted]"

// Redact returns text with every value that looks like a credential
// replaced by [Redacted]; the name it was given to, if any, is kept.
func Redact(text string) string {
	for _, p := range secretPatterns {
		text = p.ReplaceAllStringFunc(text, func(m string) string {
			sub := p.FindStringSubmatch(m)
			if len(sub) > 1 && sub[1] != "" && !strings.HasPrefix(m, "-----BEGIN") {
				return sub[1] + Redacted
			}
			return Redacted
		})
	}
	return text
}
