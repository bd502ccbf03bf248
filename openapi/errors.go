package openapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// DocumentError reports an OpenAPI document that is invalid or uses
// something this package does not support, at the position Pointer (a JSON
// pointer into the document, "" for the whole document).
type DocumentError struct {
	Pointer string
	Problem string
	err     error // what Unwrap returns
}

// ErrNoServerURL is what the error of [Load] wraps when an operation has no
// absolute http or https URL to send its requests to and Config.BaseURL is
// empty: its server URL is relative, in a document read from bytes or a
// file, or the document names no server. Set Config.BaseURL. A program
// that only lists the tools, and sends no request, can set any URL.
var ErrNoServerURL = errors.New("openapi: no absolute http or https server URL")

// Unwrap returns [ErrNoServerURL] for an error that is one, else nil.
func (e *DocumentError) Unwrap() error { return e.err }

func (e *DocumentError) Error() string {
	p := e.Pointer
	if p == "" {
		p = "/"
	}
	return fmt.Sprintf("openapi: %s: %s", p, e.Problem)
}

func docErrorf(ptr, format string, args ...any) *DocumentError {
	return &DocumentError{Pointer: ptr, Problem: fmt.Sprintf(format, args...)}
}

// StatusError is a response outside 2xx. Code mode raises it in Python as
// HTTPStatusError with status_code and body.
type StatusError struct {
	Code   int
	Method string
	// Path is the request's path, without its query (which may carry an
	// API key).
	Path string
	// Body is the response body, decoded like a successful one: JSON
	// values, else text, else bytes; nil for an empty body.
	Body any
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Code, http.StatusText(e.Code))
	if s := bodySnippet(e.Body); s != "" {
		msg += ": " + s
	}
	return msg
}

// StatusCode returns the HTTP status of the response.
func (e *StatusError) StatusCode() int { return e.Code }

// ResponseBody returns the decoded response body.
func (e *StatusError) ResponseBody() any { return e.Body }

// maxSnippet bounds the part of an error body repeated in the message.
const maxSnippet = 300

func bodySnippet(b any) string {
	var s string
	switch t := b.(type) {
	case nil:
		return ""
	case string:
		s = t
	case []byte:
		return fmt.Sprintf("(%d bytes)", len(t))
	default:
		s = compactJSON(t)
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxSnippet {
		s = string(r[:maxSnippet]) + "…"
	}
	return s
}
