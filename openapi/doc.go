// Package openapi reads an OpenAPI 3.0 or 3.1 document into operations:
// for each, a function declaration whose JSON Schema keeps what the
// document says, and an HTTP call the host makes with credentials that
// the model and the sandbox never see. It does not import ADK: package
// toolset/openapi (and its ADK v1 twin) makes each operation an ADK tool,
// and a program that only lists a catalog, checks its schemas or calls an
// API directly can use this package alone.
//
//	api, err := openapi.Load(ctx, openapi.Config{File: "petstore.yaml", BaseURL: "https://petstore.example"})
//	if err != nil { ... }
//	for _, op := range api.Ops() {
//		fmt.Println(op.Name(), op.Description())
//	}
//	pets, err := api.Call(ctx, "list_pets", map[string]any{"limit": 10})
//
// The document comes from bytes (Config.Spec), a file (Config.File) or a
// URL the host fetches (Config.URL), as JSON or YAML. It is parsed with
// github.com/pb33f/libopenapi, which reads 3.0 and 3.1 alike and resolves
// references within the document, into relative files and, for a document
// fetched from a URL, into relative URLs.
//
// # Tools
//
// Each operation the filters keep (Config.Tags, OperationIDs,
// PathPrefixes, Include) becomes a tool, in document order. Its name is the
// operationId in snake_case ("repos/get" becomes repos_get, "listPets"
// list_pets), or the method and path when there is none ("get_pets_pet_id"),
// at most 64 characters. Names that collide get a suffix (_2, _3) in
// document order, so the same document always gives the same names;
// [API.Report] lists every rename. The description is the summary and
// the description; a deprecated operation's starts with "Deprecated.".
//
// The tool's parameters are the operation's path, query, header and cookie
// parameters under their own names (a second parameter of the same name
// in another location is prefixed with it, as query_id), then the request
// body: the properties of a plain JSON, form or multipart object body
// become parameters of their own; any other body is one parameter, body.
// Header parameters named Accept, Content-Type or Authorization are ignored
// as the specification says, and so are parameters that carry an API key
// of the operation's security. Schemas are copied from the document without
// loss; every $ref becomes a reference into the tool schema's own $defs,
// and a cycle stays a cycle, which Code Mode's renderer bounds.
//
// # Calls
//
// A call serialises each parameter by its style and explode (simple,
// label and matrix in paths; form, spaceDelimited, pipeDelimited and
// deepObject in queries; simple in headers; form in cookies), encodes the
// body as JSON, form or multipart as declared, applies the credentials of
// the first security alternative Config.Auth satisfies, and sends the
// request with Config.HTTPClient to Config.BaseURL or the operation's
// server (its variables from Config.ServerVariables or their defaults).
//
// A response of at most Config.MaxResponseBytes is decoded: JSON by its
// media type, else text when it is UTF-8 text, else bytes. A status
// outside 2xx is a [*StatusError] with the status and the decoded body,
// which Code Mode raises in Python as HTTPStatusError.
//
// # Results
//
// Each tool's declaration carries, as its ResponseJsonSchema, the JSON
// schema of the operation's success response body: the first JSON media
// type of the first declared of the numbered 2xx codes in order, the 2XX
// range, then default, with the components it references under $defs.
// There is none when no JSON body is declared or its schema is empty.
//
// An operation whose success body is declared as always a JSON object
// returns the object as it is (a body that is not an object after all comes
// as {"result": value}). Every other operation, whose body is declared as
// an array, a string, a number, a boolean or something that may be null or
// not an object, or not declared at all, returns every body, objects
// included, as {"result": body}. [Op.ResultKey] says which
// ("" or "result"), so that Code Mode hands code the body itself.
//
// Values from the sandbox are hostile: path values are percent-encoded and
// may not form "." or ".." segments, header values may not hold line
// breaks, and required parameters are checked before anything is sent.
//
// # Errors
//
// A document that cannot be used gives a [*DocumentError] naming the JSON
// pointer of the problem ("/paths/~1pets/get/parameters/0/in"). With
// Config.SkipInvalid a bad operation is left out and reported instead.
// An operation without an absolute server URL, while Config.BaseURL is
// empty, is such an error, which wraps [ErrNoServerURL].
// Webhooks, callbacks and links have no tools; [API.Report] lists each
// as not supported.
//
// An API and its operations are safe for concurrent use.
package openapi
