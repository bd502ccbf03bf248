package engine

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/adk-codemode/codemode/schema"
)

// maxValidationReports bounds the tools whose validation report is
// remembered, so that a toolset that invents new tools on every request
// cannot grow the set without limit; past it, reports are logged again.
const maxValidationReports = 4096

var validationReports struct {
	sync.Mutex
	seen map[string]bool
}

// ReportValidation logs, once per tool and report, the keywords of a tool's
// parameter schema that argument validation leaves out, or that its schema
// is not validated at all. A surface is built per invocation when toolsets
// are configured, so the same report would otherwise repeat on every turn.
func ReportValidation(path string, v *schema.Validator, err error) {
	var msg string
	var attrs []any
	switch {
	case err != nil:
		msg = "codemode: tool arguments are not validated: the parameter schema does not compile"
		attrs = []any{"tool", path, "error", err.Error()}
	case len(v.Unenforced()) > 0:
		var ptrs, reasons []string
		for _, u := range v.Unenforced() {
			ptrs = append(ptrs, u.Pointer)
			reasons = append(reasons, u.Pointer+": "+u.Reason)
		}
		msg = "codemode: tool argument validation leaves out keywords that do not compile; the rest is enforced"
		attrs = []any{"tool", path, "pointers", strings.Join(ptrs, " "), "reasons", strings.Join(reasons, "; ")}
	default:
		return
	}
	key := path + "\x00" + msg + "\x00" + attrs[3].(string)
	validationReports.Lock()
	if validationReports.seen == nil {
		validationReports.seen = map[string]bool{}
	}
	seen := validationReports.seen[key]
	if !seen && len(validationReports.seen) < maxValidationReports {
		validationReports.seen[key] = true
	}
	validationReports.Unlock()
	if !seen {
		slog.Default().Warn(msg, attrs...)
	}
}
